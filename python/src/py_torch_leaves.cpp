// samebits.torch.Leaves' native half (python/samebits/torch/leaves.py): the trainer's exact
// gradient accumulator (rule 4: fixed-point sums of fp32 values, any order or partition the same)
// over a flat host buffer, and its exact all-reduce's three steps — the block ranges' MAX, the wire
// words' integer SUM, the decode — so that torch.distributed runs the collectives between them as
// the trainer's Communicator does (parallel/exact_allreduce.cpp); and the leaves' per-tensor sums
// of squares (train/statistics.hpp), whose ExactSum words the ranks add as integers. The flat
// buffer is torch_layout's (each parameter at the next kParamAlign boundary) and one value more, the
// leaf's loss. The buffers are host memory of the CPU backend, handed to Python as writable NumPy
// views.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>

#include "bindings.hpp"
#include "samebits/core/parallel/parallel_plan.hpp"
#include "samebits/core/train/statistics.hpp"
#include "samebits/det/error.hpp"

namespace sb::py {
namespace {

class LeafAccumulator {
 public:
  explicit LeafAccumulator(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors)
      : layout_(torch_layout(tensors)),
        backend_(torch_backend(-1)),
        acc_(backend_->make_accumulator(layout_flat_size(layout_) + 1)),  // and the loss
        stats_(layout_) {}

  size_t size() const { return acc_->size(); }
  std::vector<size_t> offsets() const {
    std::vector<size_t> out;
    for (const ParamView& p : layout_) out.push_back(p.offset);
    return out;
  }
  void clear() {
    acc_->clear();
    stats_.clear();
  }
  // sums += the exact value of the size fp32 values at `grad` (host memory), a leaf's gradients
  // and loss; its per-tensor sums of squares to the statistics.
  void add(uintptr_t grad) {
    const pyb::gil_scoped_release unlocked;
    const auto* g = reinterpret_cast<const float*>(grad);
    acc_->add(g);
    stats_.add_leaf(g);
  }
  // The leaves' per-tensor sums of squares as ExactSum words (a copy), for their SUM over the ranks.
  std::vector<int64_t> leaf_words() {
    std::vector<int64_t> out(stats_.words());
    stats_.to_words(out.data());
    return out;
  }
  uint64_t adds() const { return acc_->adds(); }
  uint32_t status() const { return acc_->status(); }
  // The block ranges, writable in place: the MAX over the ranks goes back into them.
  pyb::array_t<uint8_t> block_ranges(pyb::object self) {
    return pyb::array_t<uint8_t>({static_cast<pyb::ssize_t>(acc_->range_bytes())}, acc_->block_ranges(), self);
  }
  // After that MAX: the wire words (writable in place: the SUM over the ranks goes back into them).
  pyb::array_t<uint64_t> encode(pyb::object self, uint64_t total_adds) {
    size_t words = 0;
    uint64_t* wire = acc_->encode(total_adds, &words);
    return pyb::array_t<uint64_t>({static_cast<pyb::ssize_t>(words)}, wire, self);
  }
  // After the SUM: the exact sums over all ranks.
  void decode(uint64_t total_adds, uint32_t total_status) { acc_->decode(total_adds, total_status); }
  // out (n fp32, host memory) ← the sums rounded once, then one fp32 division by `divisor`.
  void round(uintptr_t out, float divisor) {
    const pyb::gil_scoped_release unlocked;
    acc_->round(reinterpret_cast<float*>(out), divisor);
  }

 private:
  std::vector<ParamView> layout_;
  std::shared_ptr<Backend> backend_;
  std::unique_ptr<GradAccumulator> acc_;
  GradientStatistics stats_;
};

}  // namespace

void bind_torch_leaves(pyb::module_& m) {
  pyb::class_<LeafAccumulator>(
      m, "_LeafAccumulator",
      "The trainer's exact gradient accumulator over (name, shape) tensors and a loss (samebits.torch.Leaves).")
      .def(pyb::init<const std::vector<std::pair<std::string, std::vector<int64_t>>>&>(), pyb::arg("tensors"))
      .def_property_readonly("size", &LeafAccumulator::size)
      .def_property_readonly("offsets", &LeafAccumulator::offsets)
      .def("leaf_words", &LeafAccumulator::leaf_words, "The leaves' per-tensor Σ‖g‖² as ExactSum words.")
      .def("clear", &LeafAccumulator::clear)
      .def("add", &LeafAccumulator::add, pyb::arg("grad"), "sums += the size fp32 values at address grad.")
      .def_property_readonly("adds", &LeafAccumulator::adds)
      .def_property_readonly("status", &LeafAccumulator::status)
      .def(
          "block_ranges", [](pyb::object self) { return self.cast<LeafAccumulator&>().block_ranges(self); },
          "The block ranges (uint8, in place), for their MAX over the ranks.")
      .def(
          "encode",
          [](pyb::object self, uint64_t total_adds) { return self.cast<LeafAccumulator&>().encode(self, total_adds); },
          pyb::arg("total_adds"), "After the MAX: the wire words (uint64, in place), for their SUM over the ranks.")
      .def("decode", &LeafAccumulator::decode, pyb::arg("total_adds"), pyb::arg("total_status"),
           "After the SUM: the exact sums over every rank.")
      .def("round", &LeafAccumulator::round, pyb::arg("out"), pyb::arg("divisor"),
           "out (n fp32 at that address) ← the sums rounded once, then divided by divisor.");
}

}  // namespace sb::py
