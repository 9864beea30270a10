// Tensor: a dtype, a shape and owning storage on one device (64-byte aligned on the host).
// A view shares its parent's storage; storage is released when the last tensor using it goes.
// Pure bookkeeping: no arithmetic here, so nothing in this file touches the numerical contract.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "samebits/core/dtype.hpp"

namespace sb {

enum class Device : uint8_t { cpu, cuda };

std::string_view device_name(Device d);  // "cpu", "cuda"

// Row-major shape, outermost dimension first: {B, T, C}.
using Shape = std::vector<int64_t>;
int64_t shape_numel(const Shape& s);       // 1 for the empty (scalar) shape
std::string shape_string(const Shape& s);  // "(4, 128, 64)"

// Host storage alignment: one cache line, and one AVX-512 vector.
constexpr size_t kHostAlignment = 64;

class Tensor {
 public:
  Tensor() = default;
  // A tensor over `storage` (already allocated on `device` by a backend, which supplies the
  // deleter through the shared_ptr): numel(shape) elements of `dtype` starting at storage.get().
  Tensor(std::shared_ptr<std::byte> storage, DType dtype, Shape shape, Device device);

  // Zero-filled host memory, aligned to kHostAlignment.
  static Tensor host(DType dtype, Shape shape);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const;  // shape()[i]; negative i counts from the end
  int64_t numel() const { return shape_numel(shape_); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_bytes(dtype_); }

  void* data() { return storage_.get(); }
  const void* data() const { return storage_.get(); }
  // Typed access; throws sb::Error when T does not match the dtype (bf16 and fp16 are uint16_t).
  template <class T>
  T* data_as();
  template <class T>
  const T* data_as() const;

  // numel(shape) elements starting `offset` elements in, sharing this tensor's storage.
  Tensor view(int64_t offset, Shape shape) const;

 private:
  void check_type(DType expected) const;

  std::shared_ptr<std::byte> storage_;  // aliasing pointer: the first element of this tensor
  DType dtype_ = DType::f32;
  Shape shape_;
  Device device_ = Device::cpu;
};

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::i32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::i64;
}

template <class T>
T* Tensor::data_as() {
  if constexpr (std::is_same_v<T, uint16_t>) {
    if (dtype_ != DType::fp16) check_type(DType::bf16);
  } else {
    check_type(dtype_of<T>());
  }
  return reinterpret_cast<T*>(storage_.get());
}

template <class T>
const T* Tensor::data_as() const {
  return const_cast<Tensor*>(this)->data_as<T>();
}

}  // namespace sb
