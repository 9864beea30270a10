// DType: the element types samebits names, one enum for the whole tree — a backend's tensors
// (f32, bf16, fp16, i32, i64) and the datasets and attributes of run files and checkpoints (f32,
// f64, i32, i64, u64, u8; HDF5 holds no bf16 or fp16). Bookkeeping only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sb {

enum class DType : uint8_t { f32, bf16, fp16, i32, i64, f64, u64, u8 };

size_t dtype_bytes(DType t);           // 4, 2, 2, 4, 8, 8, 8, 1
std::string_view dtype_name(DType t);  // "f32", "bf16", "fp16", "i32", "i64", "f64", "u64", "u8"

}  // namespace sb
