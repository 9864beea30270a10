// safetensors.hpp: writing and checked reading of safetensors files. Little-endian hosts only (the
// format's byte order is the memory's); values are copied, never converted.
#include "samebits/core/io/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <set>

#include "samebits/core/io/h5.hpp"
#include "samebits/core/io/json_string.hpp"
#include "samebits/core/io/json_value.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/det/error.hpp"

static_assert(std::endian::native == std::endian::little, "safetensors I/O copies little-endian bytes as they are");

namespace sb::io {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (k > 0) s += ", ";
    s += std::to_string(shape[k]);
  }
  return s + "]";
}

namespace {

// Bytes per element of a safetensors dtype; 0 when unknown.
uint64_t dtype_bytes(const std::string& dtype) {
  static const std::pair<const char*, uint64_t> kSizes[] = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},  {"I32", 4},     {"I16", 2},    {"I8", 1},
      {"U64", 8}, {"U32", 4}, {"U16", 2}, {"U8", 1},   {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  for (const auto& [name, bytes] : kSizes) {
    if (dtype == name) return bytes;
  }
  return 0;
}

uint64_t file_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  SB_CHECK(in.good(), path, ": cannot open it for reading");
  const auto end = in.tellg();
  SB_CHECK(end >= 0, path, ": cannot tell its size");
  return uint64_t(end);
}

void read_exact(std::ifstream& in, uint64_t offset, void* out, uint64_t bytes, const std::string& path,
                const std::string& what) {
  in.seekg(std::streamoff(offset));
  in.read(static_cast<char*>(out), std::streamsize(bytes));
  SB_CHECK(in.good() && uint64_t(in.gcount()) == bytes, path, ": could not read ", what, " (", bytes,
           " bytes at offset ", offset, "): the file is truncated or changed while read");
}

SafeTensorEntry parse_entry(const std::string& path, const std::string& name, const JsonValue& v, uint64_t data_bytes) {
  const std::string where = path + ": tensor '" + escape_untrusted(name) + "'";
  SB_CHECK(v.is(JsonValue::Kind::object), where, ": its header entry is ", json_kind_name(v.kind()),
           ", expected an object");
  for (const auto& [key, value] : v.members()) {
    SB_CHECK(key == "dtype" || key == "shape" || key == "data_offsets", where, ": unknown header field '",
             escape_untrusted(key), "' (expected dtype, shape, data_offsets)");
  }
  const JsonValue* dtype = v.find("dtype");
  const JsonValue* shape = v.find("shape");
  const JsonValue* offsets = v.find("data_offsets");
  SB_CHECK(dtype && shape && offsets, where, ": its header entry needs dtype, shape and data_offsets");
  SB_CHECK(dtype->is(JsonValue::Kind::string), where, ": dtype is ", json_kind_name(dtype->kind()),
           ", expected a string");
  SafeTensorEntry e;
  e.name = name;
  e.dtype = dtype->string();
  const uint64_t element = dtype_bytes(e.dtype);
  SB_CHECK(element > 0, where, ": unknown dtype '", escape_untrusted(e.dtype), "'");
  SB_CHECK(shape->is(JsonValue::Kind::array) && shape->items().size() <= 8, where,
           ": shape must be an array of at most 8 dimensions");
  uint64_t numel = 1;
  for (const JsonValue& d : shape->items()) {
    uint64_t n = 0;
    SB_CHECK(d.as_uint(n), where, ": shape holds a value that is not a non-negative integer");
    SB_CHECK(n == 0 || numel <= data_bytes / n, where, ": shape implies more elements than the file holds");
    numel *= n;
    e.shape.push_back(int64_t(n));
  }
  SB_CHECK(offsets->is(JsonValue::Kind::array) && offsets->items().size() == 2 &&
               offsets->items()[0].as_uint(e.begin) && offsets->items()[1].as_uint(e.end),
           where, ": data_offsets must be [BEGIN, END], two non-negative integers");
  SB_CHECK(e.begin <= e.end && e.end <= data_bytes, where, ": data_offsets [", e.begin, ", ", e.end,
           "] are not inside the data buffer of ", data_bytes, " bytes");
  SB_CHECK(numel <= (e.end - e.begin) / element && numel * element == e.end - e.begin, where, ": data_offsets span ",
           e.end - e.begin, " bytes but dtype ", e.dtype, " and shape ", shape_text(e.shape), " need ", numel, " x ",
           element);
  return e;
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<SafeTensor>& tensors,
                       const SafetensorsMetadata& metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (std::size_t i = 0; i < metadata.size(); ++i) {
      if (i > 0) header += ',';
      header += json_string(metadata[i].first);
      header += ':';
      header += json_string(metadata[i].second);
    }
    header += "}";
  }
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const SafeTensor& t : tensors) {
    SB_CHECK(t.name != "__metadata__" && !t.name.empty() && names.insert(t.name).second, path, ": tensor name '",
             t.name, "' is empty, reserved or repeated");
    uint64_t numel = 1;
    for (const int64_t d : t.shape) numel *= uint64_t(d);
    SB_CHECK(numel == t.data.size(), path, ": tensor ", t.name, " has ", t.data.size(), " values for shape ",
             shape_text(t.shape));
    std::string shape;
    for (std::size_t k = 0; k < t.shape.size(); ++k) {
      if (k > 0) shape += ',';
      shape += std::to_string(t.shape[k]);
    }
    const uint64_t end = offset + numel * sizeof(float);
    header += std::string(header.size() > 1 ? "," : "") + json_string(t.name) + ":{\"dtype\":\"F32\",\"shape\":[" +
              shape + "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  h5::write_file_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(header.data(), std::streamsize(header.size()));
    for (const SafeTensor& t : tensors) {
      out.write(reinterpret_cast<const char*>(t.data.data()), std::streamsize(t.data.size() * sizeof(float)));
    }
    out.flush();
    SB_CHECK(out.good(), path, ": writing failed (disk full?)");
  });
}

SafetensorsHeader read_safetensors_header(const std::string& path) {
  const uint64_t size = file_size(path);
  SB_CHECK(size >= 8, path, ": ", size,
           " bytes is too short for a safetensors file (8-byte header length, "
           "JSON header, data)");
  std::ifstream in(path, std::ios::binary);
  uint64_t n = 0;
  read_exact(in, 0, &n, 8, path, "the header length");
  SB_CHECK(n >= 2 && n <= kSafetensorsMaxHeader && n <= size - 8, path, ": the header length ", n,
           " is not in [2, min(", kSafetensorsMaxHeader, ", ", size - 8,
           ")]: not a safetensors file, or a truncated one");
  std::string text(n, '\0');
  read_exact(in, 8, text.data(), n, path, "the JSON header");
  SB_CHECK(text[0] == '{', path, ": the header does not start with '{': not a safetensors file");
  const JsonValue root = parse_json(text, path + ": header");
  SB_CHECK(root.is(JsonValue::Kind::object), path, ": the header is not a JSON object");
  SafetensorsHeader h;
  h.data_start = 8 + n;
  const uint64_t data_bytes = size - h.data_start;
  for (const auto& [name, value] : root.members()) {
    if (name == "__metadata__") {
      SB_CHECK(value.is(JsonValue::Kind::object), path, ": __metadata__ is ", json_kind_name(value.kind()),
               ", expected an object of strings");
      for (const auto& [key, text_value] : value.members()) {
        SB_CHECK(text_value.is(JsonValue::Kind::string), path, ": __metadata__ '", escape_untrusted(key), "' is ",
                 json_kind_name(text_value.kind()), ", expected a string");
        h.metadata.emplace_back(key, text_value.string());
      }
      continue;
    }
    SB_CHECK(!name.empty(), path, ": a tensor has an empty name");
    h.tensors.push_back(parse_entry(path, name, value, data_bytes));
  }
  // The format requires the tensors to cover the buffer exactly, without overlap.
  std::vector<const SafeTensorEntry*> by_offset;
  for (const SafeTensorEntry& e : h.tensors) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](auto* a, auto* b) { return a->begin < b->begin || (a->begin == b->begin && a->end < b->end); });
  uint64_t covered = 0;
  for (const SafeTensorEntry* e : by_offset) {
    SB_CHECK(e->begin == covered, path, ": tensor '", escape_untrusted(e->name), "' starts at byte ", e->begin,
             " of the data buffer where ", covered, " was expected (tensors overlap or leave a gap)");
    covered = e->end;
  }
  SB_CHECK(covered == data_bytes, path, ": the tensors cover ", covered, " of the ", data_bytes,
           " bytes after the header (bytes beyond the last tensor, or the file was truncated)");
  return h;
}

std::vector<float> read_safetensor(const std::string& path, const SafetensorsHeader& header,
                                   const SafeTensorEntry& entry) {
  SB_CHECK(entry.dtype == "F32", path, ": tensor '", escape_untrusted(entry.name), "' has dtype ",
           escape_untrusted(entry.dtype), "; samebits reads F32 only (convert it, e.g. torch: t.float())");
  std::vector<float> data((entry.end - entry.begin) / sizeof(float));
  std::ifstream in(path, std::ios::binary);
  SB_CHECK(in.good(), path, ": cannot open it for reading");
  read_exact(in, header.data_start + entry.begin, data.data(), entry.end - entry.begin, path,
             "tensor '" + escape_untrusted(entry.name) + "'");
  return data;
}

}  // namespace sb::io
