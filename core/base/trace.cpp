// The op-hash stream's recorder, scopes and span rows (trace.hpp).
#include "samebits/core/trace.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "samebits/det/error.hpp"
#include "samebits/det/fingerprint.hpp"

namespace sb::trace {

const std::string& Recorder::site() const {
  static const std::string none;
  return scopes_.empty() ? none : scopes_.back();
}

Row& Recorder::add(const char* op) {
  Row& r = rows_.emplace_back();
  r.site = site();
  r.op = op;
  r.leaf = leaf_;
  return r;
}

Scope::Scope(const Backend& backend, const char* prefix, int64_t number, const char* suffix)
    : recorder_(backend.tracer()) {
  if (recorder_ == nullptr) return;
  recorder_->push(number < 0 ? std::string(prefix) + suffix : std::string(prefix) + std::to_string(number) + suffix);
}

Scope Scope::within(const Backend& backend, const char* infix, int64_t number) {
  Recorder* recorder = backend.tracer();
  if (recorder != nullptr) recorder->push(recorder->site() + infix + std::to_string(number));
  return Scope(recorder);
}

Scope::~Scope() {
  if (recorder_ != nullptr) recorder_->pop();
}

void record_spans(Backend& backend, const char* op, const float* flat, const std::vector<TensorSpan>& spans,
                  const std::vector<std::string>& names, const std::vector<std::vector<uint64_t>>& inputs) {
  Recorder* rec = backend.tracer();
  if (rec == nullptr) return;
  std::vector<uint64_t> hashes(spans.size());
  backend.fingerprints(flat, spans, hashes.data());
  for (size_t t = 0; t < spans.size(); ++t) {
    Row& r = rec->add(op);
    if (!names[t].empty()) r.op += " " + names[t];
    if (t < inputs.size()) r.inputs = inputs[t];
    r.outputs = {hashes[t]};
    r.output_numel = {spans[t].numel};
    r.shape = {static_cast<int64_t>(spans[t].numel)};
    if (rec->keep_values()) {
      r.values.resize(spans[t].numel);
      backend.copy_to_host(r.values.data(), flat + spans[t].offset, spans[t].numel * sizeof(float));
    }
  }
}

std::vector<Row> canonical_order(std::vector<Row> rows) {
  const auto key = [](const Row& r) { return r.leaf < 0 ? std::numeric_limits<int64_t>::max() : r.leaf; };
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) { return key(a) < key(b); });
  return rows;
}

namespace {

void put(std::vector<uint8_t>& out, const void* p, size_t bytes) {
  const auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + bytes);
}
template <class T>
void put_vector(std::vector<uint8_t>& out, const std::vector<T>& v) {
  const uint64_t n = v.size();
  put(out, &n, sizeof n);
  put(out, v.data(), n * sizeof(T));
}

struct Reader {
  const std::vector<uint8_t>& in;
  size_t at = 0;
  void get(void* p, size_t bytes) {
    SB_CHECK(bytes <= in.size() - at, "trace stream: ", in.size(), " bytes end inside a row");
    std::memcpy(p, in.data() + at, bytes);
    at += bytes;
  }
  template <class T>
  std::vector<T> vector() {
    uint64_t n = 0;
    get(&n, sizeof n);
    SB_CHECK(n <= (in.size() - at) / sizeof(T), "trace stream: a length of ", n, " beyond its ", in.size(), " bytes");
    std::vector<T> v(n);
    get(v.data(), n * sizeof(T));
    return v;
  }
};

}  // namespace

std::vector<uint8_t> pack(const std::vector<Row>& rows) {
  std::vector<uint8_t> out;
  for (const Row& r : rows) {
    put_vector(out, std::vector<char>(r.site.begin(), r.site.end()));
    put_vector(out, std::vector<char>(r.op.begin(), r.op.end()));
    put(out, &r.leaf, sizeof r.leaf);
    put_vector(out, r.inputs);
    put_vector(out, r.outputs);
    put_vector(out, r.shape);
    put_vector(out, r.output_numel);
  }
  return out;
}

std::vector<Row> unpack(const std::vector<uint8_t>& bytes) {
  std::vector<Row> rows;
  Reader in{bytes};
  while (in.at < bytes.size()) {
    Row& r = rows.emplace_back();
    const std::vector<char> site = in.vector<char>(), op = in.vector<char>();
    r.site.assign(site.begin(), site.end());
    r.op.assign(op.begin(), op.end());
    in.get(&r.leaf, sizeof r.leaf);
    r.inputs = in.vector<uint64_t>();
    r.outputs = in.vector<uint64_t>();
    r.shape = in.vector<int64_t>();
    r.output_numel = in.vector<uint64_t>();
  }
  return rows;
}

}  // namespace sb::trace
