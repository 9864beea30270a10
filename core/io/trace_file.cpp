// trace_file.hpp: one group per traced step, /steps/<S>, of ragged columns — each row's site and
// op as text lines (u8), leaf (i64), and its input hashes, output hashes and shape flattened (u64,
// u64, i64) with (rows + 1) offsets into them.
#include "samebits/core/io/trace_file.hpp"

#include <algorithm>

#include "samebits/core/io/h5.hpp"
#include "samebits/det/error.hpp"

namespace sb::io {
namespace {

constexpr const char* kFormat = "samebits-trace";
constexpr int64_t kVersion = 1;

std::vector<uint8_t> lines(const std::vector<trace::Row>& rows, std::string trace::Row::*field) {
  std::vector<uint8_t> out;
  for (const trace::Row& r : rows) {
    const std::string& s = r.*field;
    out.insert(out.end(), s.begin(), s.end());
    out.push_back('\n');
  }
  return out;
}

std::vector<std::string> split_lines(const std::vector<uint8_t>& text, size_t rows, const std::string& where) {
  std::vector<std::string> out;
  std::string line;
  for (uint8_t c : text) {
    if (c != '\n') {
      line += char(c);
      continue;
    }
    out.push_back(std::move(line));
    line.clear();
  }
  SB_CHECK(out.size() == rows && line.empty(), where, ": expected ", rows, " lines");
  return out;
}

template <class T, class Get>
void ragged(h5::Group& g, const std::string& name, const std::vector<trace::Row>& rows, Get get) {
  std::vector<T> flat;
  std::vector<uint64_t> offsets{0};
  for (const trace::Row& r : rows) {
    const auto& v = get(r);
    flat.insert(flat.end(), v.begin(), v.end());
    offsets.push_back(flat.size());
  }
  g.write_dataset<T>(name, flat);
  g.write_dataset<uint64_t>(name + "_offsets", offsets);
}

template <class T, class Set>
void read_ragged(const h5::Group& g, const std::string& name, std::vector<trace::Row>& rows, Set set) {
  const std::vector<T> flat = g.dataset(name).read<T>();
  const std::vector<uint64_t> off = g.dataset(name + "_offsets").read<uint64_t>();
  SB_CHECK(off.size() == rows.size() + 1 && off.front() == 0 && off.back() == flat.size(), g.where(), "/", name,
           "_offsets: not ", rows.size() + 1, " ascending offsets into ", name);
  for (size_t i = 0; i < rows.size(); ++i) {
    SB_CHECK(off[i] <= off[i + 1], g.where(), "/", name, "_offsets: not ascending at row ", i);
    set(rows[i], std::vector<T>(flat.begin() + int64_t(off[i]), flat.begin() + int64_t(off[i + 1])));
  }
}

}  // namespace

std::string trace_file_path(const std::string& run_path) {
  const std::string ext = ".h5";
  const bool h5 = run_path.size() > ext.size() && run_path.compare(run_path.size() - ext.size(), ext.size(), ext) == 0;
  return (h5 ? run_path.substr(0, run_path.size() - ext.size()) : run_path) + ".trace.h5";
}

void write_trace_file(const std::string& path, const std::string& experiment_id, const std::vector<TracedStep>& steps,
                      bool replayable) {
  h5::File f = h5::File::create(path);
  f.set_attr("format", kFormat);
  f.set_attr("format_version", kVersion);
  f.set_attr("experiment_id", experiment_id);
  if (!replayable) f.set_attr("replayable", int64_t{0});
  for (const TracedStep& s : steps) {
    h5::Group g = f.create_group("steps/" + std::to_string(s.step));
    g.set_attr("step", s.step);
    g.write_dataset<uint8_t>("site", lines(s.rows, &trace::Row::site));
    g.write_dataset<uint8_t>("op", lines(s.rows, &trace::Row::op));
    std::vector<int64_t> leaf;
    for (const trace::Row& r : s.rows) leaf.push_back(r.leaf);
    g.write_dataset<int64_t>("leaf", leaf);
    ragged<uint64_t>(g, "inputs", s.rows, [](const trace::Row& r) { return r.inputs; });
    ragged<uint64_t>(g, "outputs", s.rows, [](const trace::Row& r) { return r.outputs; });
    ragged<int64_t>(g, "shape", s.rows, [](const trace::Row& r) { return r.shape; });
  }
  f.close();
}

bool trace_file_replayable(const std::string& path) {
  const h5::File f = h5::File::open(path);
  SB_CHECK(f.has_attr("format") && f.attr_string("format") == kFormat, path, ": not a samebits trace file");
  return !f.has_attr("replayable") || f.attr_int("replayable") != 0;
}

std::vector<TracedStep> read_trace_file(const std::string& path, std::string* experiment_id) {
  const h5::File f = h5::File::open(path);
  SB_CHECK(f.has_attr("format") && f.attr_string("format") == kFormat, path, ": not a samebits trace file");
  SB_CHECK(f.attr_int("format_version") == kVersion, path, ": trace format version ", f.attr_int("format_version"),
           ", this samebits reads ", kVersion);
  if (experiment_id != nullptr) *experiment_id = f.attr_string("experiment_id");
  std::vector<TracedStep> out;
  if (!f.has("steps")) return out;
  const h5::Group steps = f.group("steps");
  for (const std::string& name : steps.names()) {
    const h5::Group g = steps.group(name);
    TracedStep s;
    s.step = g.attr_int("step");
    const std::vector<int64_t> leaf = g.dataset("leaf").read<int64_t>();
    s.rows.resize(leaf.size());
    const std::vector<std::string> site =
        split_lines(g.dataset("site").read<uint8_t>(), leaf.size(), g.where() + "/site");
    const std::vector<std::string> op = split_lines(g.dataset("op").read<uint8_t>(), leaf.size(), g.where() + "/op");
    for (size_t i = 0; i < leaf.size(); ++i) {
      s.rows[i].leaf = leaf[i];
      s.rows[i].site = site[i];
      s.rows[i].op = op[i];
    }
    read_ragged<uint64_t>(g, "inputs", s.rows, [](trace::Row& r, std::vector<uint64_t> v) { r.inputs = std::move(v); });
    read_ragged<uint64_t>(g, "outputs", s.rows,
                          [](trace::Row& r, std::vector<uint64_t> v) { r.outputs = std::move(v); });
    read_ragged<int64_t>(g, "shape", s.rows, [](trace::Row& r, std::vector<int64_t> v) { r.shape = std::move(v); });
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const TracedStep& a, const TracedStep& b) { return a.step < b.step; });
  return out;
}

}  // namespace sb::io
