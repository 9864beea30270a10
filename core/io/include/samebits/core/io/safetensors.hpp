// The safetensors format (Hugging Face): u64 little-endian N, N bytes of a JSON header
// {"NAME": {"dtype": "F32", "shape": [..], "data_offsets": [BEGIN, END]}, …, "__metadata__":
// {"k": "v"}}, then the data buffer, each tensor's little-endian row-major bytes at
// [BEGIN, END). samebits writes and reads F32 only. Contract: values are written and read back
// bit for bit. Reading is for files from strangers: the header length, the JSON (json_value.hpp),
// every dtype, shape and offset is checked (offsets inside the buffer, sized as the shape says,
// non-overlapping and covering it, as the format requires) before any tensor is allocated; each
// problem is one sb::Error naming the file and the tensor (names escaped).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sb::io {

// Header lengths above this are refused (the safetensors library's own limit).
constexpr uint64_t kSafetensorsMaxHeader = 100000000;

struct SafeTensor {
  std::string name;            // "transformer.wte.weight"
  std::vector<int64_t> shape;  // row-major; empty for a scalar
  std::vector<float> data;     // (prod(shape)) values
};

using SafetensorsMetadata = std::vector<std::pair<std::string, std::string>>;

// Writes `tensors` (in this order, data packed without gaps) and `metadata` to `path` atomically
// (temporary file, fsync, rename). The header is padded with spaces to a multiple of 8 bytes so
// the data buffer stays aligned. Names must be unique and not "__metadata__".
void write_safetensors(const std::string& path, const std::vector<SafeTensor>& tensors,
                       const SafetensorsMetadata& metadata = {});

// One tensor of a checked header: where its bytes are.
struct SafeTensorEntry {
  std::string name;
  std::string dtype;  // as written: "F32", "F16", "BF16", …
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets in the data buffer
};

struct SafetensorsHeader {
  std::vector<SafeTensorEntry> tensors;  // in header order
  SafetensorsMetadata metadata;
  uint64_t data_start = 0;  // file offset of the data buffer: 8 + header length
};

// The header of `path`, checked against the file's size (dtypes other than F32 are listed, not
// refused: the caller names the tensor it cannot use).
SafetensorsHeader read_safetensors_header(const std::string& path);

// One tensor's values. Its dtype must be F32.
std::vector<float> read_safetensor(const std::string& path, const SafetensorsHeader& header,
                                   const SafeTensorEntry& entry);

// "[768, 2304]": a shape as safetensors and PyTorch write it, for messages.
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace sb::io
