// DType and Tensor bookkeeping and zero-filled, 64-byte aligned host storage (2 MiB huge-page
// mappings from 2 MiB on: det/huge_pages.hpp). No arithmetic on values.
#include "samebits/core/tensor.hpp"

#include <cstring>
#include <new>
#include <sstream>

#include "samebits/core/parallel_zero.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/huge_pages.hpp"

namespace sb {

size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::bf16: return 2;
    case DType::fp16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::f64: return 8;
    case DType::u64: return 8;
    case DType::u8: return 1;
  }
  SB_FAIL("unknown dtype ", static_cast<int>(t));
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::f64: return "f64";
    case DType::u64: return "u64";
    case DType::u8: return "u8";
  }
  SB_FAIL("unknown dtype ", static_cast<int>(t));
}

std::string_view device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    SB_CHECK(d >= 0, "tensor dimension ", d, " is negative in shape ", shape_string(s));
    n *= d;
  }
  return n;
}

std::string shape_string(const Shape& s) {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ')';
  return os.str();
}

Tensor::Tensor(std::shared_ptr<std::byte> storage, DType dtype, Shape shape, Device device)
    : storage_(std::move(storage)), dtype_(dtype), shape_(std::move(shape)), device_(device) {
  shape_numel(shape_);
}

Tensor Tensor::host(DType dtype, Shape shape) {
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_bytes(dtype);
  // A multiple of the alignment, never a zero size.
  const size_t padded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment + kHostAlignment;
  void* p = det::huge_alloc(padded);
  // A fresh huge-page mapping is zero: first-touched over the threads, as the compute splits it;
  // heap memory is zero-filled.
  if (det::huge_mapping(padded)) cpu::parallel_first_touch(p, padded);
  else cpu::parallel_zero(p, padded);
  std::shared_ptr<std::byte> storage(static_cast<std::byte*>(p), [padded](std::byte* q) { det::huge_free(q, padded); });
  return Tensor(std::move(storage), dtype, std::move(shape), Device::cpu);
}

int64_t Tensor::dim(int i) const {
  const int rank = static_cast<int>(shape_.size());
  const int k = i < 0 ? rank + i : i;
  SB_CHECK(k >= 0 && k < rank, "dimension ", i, " requested of a tensor of shape ", shape_string(shape_));
  return shape_[k];
}

Tensor Tensor::view(int64_t offset, Shape shape) const {
  SB_CHECK(defined(), "view of an empty tensor");
  const int64_t n = shape_numel(shape);
  SB_CHECK(offset >= 0 && offset + n <= numel(), "view of ", n, " elements at offset ", offset,
           " does not fit in a tensor of shape ", shape_string(shape_));
  std::shared_ptr<std::byte> alias(storage_, storage_.get() + offset * dtype_bytes(dtype_));
  return Tensor(std::move(alias), dtype_, std::move(shape), device_);
}

void Tensor::check_type(DType expected) const {
  SB_CHECK(dtype_ == expected, "tensor of dtype ", dtype_name(dtype_), " accessed as ", dtype_name(expected));
}

}  // namespace sb
