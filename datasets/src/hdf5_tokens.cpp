// decode_hdf5_tokens: a minimal, self-contained read of a 1-D integer dataset with the HDF5 C API.
// Every HDF5 failure becomes an sb::Error naming the file and the dataset; HDF5's own error printing
// is silenced while we work and restored after. Hdf5Tokens: the decoded tokens, checked again.
#include "samebits/data/hdf5_tokens.hpp"

#include <hdf5.h>
#include <sys/stat.h>

#include <algorithm>

#include "samebits/det/error.hpp"

namespace sb::data {

namespace {

// Silences HDF5's automatic error stack printing for one scope.
class QuietHdf5 {
 public:
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// An HDF5 identifier closed by `close` at scope exit.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_FLOAT: return "floating-point";
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return "enum";
    case H5T_ARRAY: return "array";
    default: return "non-integer";
  }
}

void check_token(const std::string& where, int64_t v, uint64_t position, uint64_t vocab) {
  SB_CHECK(v >= 0 && uint64_t(v) < vocab, where, ": token ", v, " at position ", position,
           " is outside the vocabulary [0, ", vocab, ") (model.vocab)");
}

}  // namespace

std::pair<std::string, std::string> split_hdf5_path(const std::string& spec) {
  const size_t colon = spec.rfind(":/");
  SB_CHECK(colon != std::string::npos && colon > 0, "hdf5 data path '", spec,
           "' must name the file and the dataset: FILE.h5:/dataset");
  return {spec.substr(0, colon), spec.substr(colon + 1)};
}

std::vector<int32_t> decode_hdf5_tokens(const std::string& file_name, const std::string& dataset, uint64_t vocab) {
  const std::string where = "hdf5 '" + file_name + "', dataset '" + dataset + "'";
  QuietHdf5 quiet;
  Handle file(H5Fopen(file_name.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  SB_CHECK(file.ok(), "hdf5 '", file_name, "' cannot be opened: not an HDF5 file, or not readable");
  Handle ds(H5Dopen2(file.get(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
  SB_CHECK(ds.ok(), "hdf5 '", file_name, "' has no dataset '", dataset, "'");
  Handle type(H5Dget_type(ds.get()), H5Tclose);
  SB_CHECK(type.ok(), where, ": cannot read the datatype");
  const H5T_class_t cls = H5Tget_class(type.get());
  SB_CHECK(cls == H5T_INTEGER, where, " holds ", class_name(cls), " values, expected integer token ids");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  SB_CHECK(space.ok(), where, ": cannot read the dataspace");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  SB_CHECK(rank == 1, where, " has rank ", rank, ", expected a 1-D dataset of token ids");
  hsize_t n = 0;
  H5Sget_simple_extent_dims(space.get(), &n, nullptr);
  // Every token of a dataset without filters (samebits reads no other: the structure walk before
  // this refuses them) is stored in the file: a count the file cannot hold is damage (or chunks
  // never written), refused before it sizes an allocation.
  const std::size_t element = H5Tget_size(type.get());
  struct stat st {};
  SB_CHECK(::stat(file_name.c_str(), &st) == 0 && element > 0 && n <= uint64_t(st.st_size) / element, where, " claims ",
           n, " tokens of ", element, " bytes, more than the file's ", st.st_size,
           " bytes hold (damaged, or written with gaps)");
  std::vector<int32_t> tokens(n);

  constexpr hsize_t kChunk = hsize_t{1} << 20;
  std::vector<int64_t> buffer(std::min<hsize_t>(n, kChunk));  // (chunk,)
  for (hsize_t start = 0; start < n; start += kChunk) {
    const hsize_t count = std::min(kChunk, n - start);
    Handle mem(H5Screate_simple(1, &count, nullptr), H5Sclose);
    SB_CHECK(mem.ok() && H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr) >= 0, where,
             ": cannot select elements [", start, ", ", start + count, ")");
    SB_CHECK(H5Dread(ds.get(), H5T_NATIVE_INT64, mem.get(), space.get(), H5P_DEFAULT, buffer.data()) >= 0, where,
             ": cannot read elements [", start, ", ", start + count, ")");
    for (hsize_t i = 0; i < count; ++i) {
      check_token(where, buffer[i], start + i, vocab);
      tokens[start + i] = int32_t(buffer[i]);
    }
  }
  return tokens;
}

Hdf5Tokens::Hdf5Tokens(const std::string& spec, uint64_t vocab, const Hdf5Decoder& decode) : vocab_(vocab) {
  std::tie(file_, dataset_) = split_hdf5_path(spec);
  struct stat st {};
  SB_CHECK(::stat(file_.c_str(), &st) == 0, "hdf5 '", file_, "': no such file");
  tokens_ = decode(file_, dataset_, vocab_);
  const std::string where = "hdf5 '" + file_ + "', dataset '" + dataset_ + "'";
  for (std::size_t i = 0; i < tokens_.size(); ++i) check_token(where, tokens_[i], i, vocab_);
}

std::string Hdf5Tokens::describe() const {
  return "hdf5 '" + file_ + "', dataset '" + dataset_ + "' (" + std::to_string(tokens_.size()) + " tokens)";
}

void Hdf5Tokens::read(uint64_t pos, uint64_t len, int32_t* out) const {
  const uint64_t n = tokens_.size();
  SB_CHECK(pos <= n && len <= n - pos, describe(), ": window [", pos, ", ", pos + len, ") is outside the ", n,
           " tokens");
  std::copy_n(tokens_.data() + pos, len, out);
}

}  // namespace sb::data
