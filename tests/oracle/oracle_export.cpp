// oracle_export OUT.h5 NORM TIED BIAS: runs a tiny GPT (GPT-2 init, three leaves of two sequences)
// through samebits' CPU backend and writes its weights, tokens, batch loss and batch gradient to
// an HDF5 file for gpt_oracle.py, which recomputes them in PyTorch float64. Layout (a minimal
// writer; the run store of core/io formalises the format):
//   root attributes  vocab seq_len n_layer n_head n_embd leaf_size leaves (int), norm (string),
//                    tied_head bias (int 0/1)
//   /tokens          int32 (leaves, leaf_size, seq_len + 1)
//   /loss            float32 (1): the batch mean loss
//   /params/<name>   float32, the tensor's shape
//   /grads/<name>    float32, the tensor's shape: the batch gradient (mean over leaves)
#include <hdf5.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "samebits/core/backend.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/det/error.hpp"

namespace {

using namespace sb;

hid_t checked(hid_t id, const std::string& what) {
  SB_CHECK(id >= 0, "HDF5: ", what, " failed");
  return id;
}

void write_dataset(hid_t loc, const std::string& name, hid_t type, const Shape& shape, const void* data) {
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  const hid_t space =
      checked(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), "dataspace of " + name);
  const hid_t set =
      checked(H5Dcreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "create " + name);
  checked(H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "write " + name);
  H5Dclose(set);
  H5Sclose(space);
}

void write_attr(hid_t loc, const char* name, int64_t value) {
  const hid_t space = checked(H5Screate(H5S_SCALAR), "attribute space");
  const hid_t attr = checked(H5Acreate2(loc, name, H5T_NATIVE_INT64, space, H5P_DEFAULT, H5P_DEFAULT), name);
  checked(H5Awrite(attr, H5T_NATIVE_INT64, &value), name);
  H5Aclose(attr);
  H5Sclose(space);
}

void write_attr(hid_t loc, const char* name, const std::string& value) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.size());
  const hid_t space = checked(H5Screate(H5S_SCALAR), "attribute space");
  const hid_t attr = checked(H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT), name);
  checked(H5Awrite(attr, type, value.data()), name);
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
}

bool flag(const char* s) { return std::strcmp(s, "1") == 0 || std::strcmp(s, "true") == 0; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: oracle_export OUT.h5 layernorm|rmsnorm TIED(0|1) BIAS(0|1)\n");
    return 2;
  }
  try {
    GPTConfig cfg;
    cfg.vocab = 37, cfg.seq_len = 16, cfg.n_layer = 2, cfg.n_head = 2, cfg.n_embd = 24;
    const std::string norm = argv[2];
    SB_CHECK(norm == "layernorm" || norm == "rmsnorm", "norm '", norm, "' is not layernorm or rmsnorm");
    cfg.norm = norm == "layernorm" ? NormKind::layernorm : NormKind::rmsnorm;
    cfg.tied_head = flag(argv[3]);
    cfg.bias = flag(argv[4]);
    const int leaf_size = 2, leaves = 3;

    auto be = make_cpu_backend();
    GPT model(cfg, leaf_size, *be);
    model.init(31337);
    std::vector<int32_t> tokens(static_cast<size_t>(leaves) * leaf_size * (cfg.seq_len + 1));
    uint32_t x = 2718281;
    for (int32_t& t : tokens) t = static_cast<int32_t>(((x = x * 1664525u + 1013904223u) >> 8) % cfg.vocab);
    std::vector<const int32_t*> leaf_ptrs;
    for (int l = 0; l < leaves; ++l)
      leaf_ptrs.push_back(tokens.data() + static_cast<size_t>(l) * leaf_size * (cfg.seq_len + 1));
    auto acc = be->make_accumulator(model.flat_size());
    std::vector<float> grad(model.flat_size());
    const float loss = batch_gradient(model, leaf_ptrs, *acc, grad.data());
    const float* w = model.weights().data_as<float>();

    const hid_t file =
        checked(H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), std::string("create ") + argv[1]);
    write_attr(file, "vocab", cfg.vocab);
    write_attr(file, "seq_len", cfg.seq_len);
    write_attr(file, "n_layer", cfg.n_layer);
    write_attr(file, "n_head", cfg.n_head);
    write_attr(file, "n_embd", cfg.n_embd);
    write_attr(file, "leaf_size", leaf_size);
    write_attr(file, "leaves", leaves);
    write_attr(file, "norm", norm);
    write_attr(file, "tied_head", cfg.tied_head ? 1 : 0);
    write_attr(file, "bias", cfg.bias ? 1 : 0);
    write_dataset(file, "tokens", H5T_NATIVE_INT32, {leaves, leaf_size, cfg.seq_len + 1}, tokens.data());
    write_dataset(file, "loss", H5T_NATIVE_FLOAT, {1}, &loss);
    const hid_t params = checked(H5Gcreate2(file, "params", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "group params");
    const hid_t grads = checked(H5Gcreate2(file, "grads", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "group grads");
    for (const ParamView& p : model.params()) {
      write_dataset(params, p.name, H5T_NATIVE_FLOAT, p.shape, w + p.offset);
      write_dataset(grads, p.name, H5T_NATIVE_FLOAT, p.shape, grad.data() + p.offset);
    }
    H5Gclose(grads);
    H5Gclose(params);
    H5Fclose(file);
    std::printf("%s: loss %.9g, %zu tensors\n", argv[1], loss, model.params().size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oracle_export: %s\n", e.what());
    return 1;
  }
  return 0;
}
