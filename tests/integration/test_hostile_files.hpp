// The resealing fuzzer of test_hostile_files (default suite) and test_hostile_files_slow: a damaged
// or crafted file with a valid seal reaches HDF5's decoders, so mutations are aimed at HDF5
// metadata — object header prefixes and message headers, datatype, dataspace, layout and attribute
// messages, symbol-table B-trees and nodes, local heaps, chunk-index B-trees, global heaps (in a
// copy with variable-length strings, as older run files hold) — found by walking the file's format
// (superblock v0, version-1 object headers: what HDF5 1.10 writes by default), each mutant sealed
// again with run::seal_file. Every command that opens a file must read it correctly or refuse it
// with one clear line and exit 2 (1 from diff and verify when it reads but differs): never a
// signal, a sanitizer report or a hang.
#pragma once
#include <doctest/doctest.h>
#include <hdf5.h>

#include <cctype>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "integration/test_damaged_files.hpp"

namespace sbt {

// A part of the file that HDF5 decodes: [at, at + size).
struct Region {
  std::size_t at = 0, size = 0;
  std::string kind;
};

class MetadataMap {
 public:
  explicit MetadataMap(const std::vector<char>& bytes) : b_(bytes) {
    static const char signature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
    REQUIRE(b_.size() > 96);
    REQUIRE(std::memcmp(b_.data(), signature, 8) == 0);
    REQUIRE(b_[8] == 0);  // superblock version 0: 8-byte offsets and lengths
    add(0, 96, "superblock");
    object_header(u(64, 8));
    for (std::size_t at = 0; at + 16 <= b_.size(); ++at) {
      if (std::memcmp(b_.data() + at, "GCOL", 4) == 0)
        add(at, std::min<std::size_t>(u(at + 8, 8), 4096), "global heap");
    }
  }
  const std::vector<Region>& regions() const { return regions_; }
  std::set<std::string> kinds() const {
    std::set<std::string> k;
    for (const Region& r : regions_) k.insert(r.kind);
    return k;
  }

 private:
  uint64_t u(std::size_t at, int n) const {
    uint64_t v = 0;
    if (at + std::size_t(n) > b_.size()) return 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | uint8_t(b_[at + std::size_t(k)]);
    return v;
  }
  bool valid(uint64_t at, uint64_t size) const { return at < b_.size() && size <= b_.size() - at && size > 0; }
  void add(uint64_t at, uint64_t size, const std::string& kind) {
    if (valid(at, size)) regions_.push_back({std::size_t(at), std::size_t(size), kind});
  }

  // A version-1 object header: 16-byte prefix, then messages (type u16, size u16, flags, 3 reserved).
  void object_header(uint64_t at) {
    if (!valid(at, 16) || b_[at] != 1 || !seen_.insert(at).second) return;
    add(at, 16, "object header");
    messages(at + 16, u(at + 8, 4));
  }
  void messages(uint64_t at, uint64_t size) {
    const uint64_t end = at + size;
    while (at + 8 <= end && valid(at, 8)) {
      const uint64_t type = u(at, 2), length = u(at + 2, 2), body = at + 8;
      add(at, 8, "message header");
      const char* kinds[] = {"nil message",        "dataspace message",  "link info message",  "datatype message",
                             "fill value message", "fill value message", "link message",       "external files message",
                             "layout message",     "bogus message",      "group info message", "filter message",
                             "attribute message"};
      if (type < 13 && type != 0) add(body, length, kinds[type]);
      if (type == 0x10) messages(u(body, 8), u(body + 8, 8));  // continuation
      if (type == 0x06) link(body, length);                    // a new-style group's member
      if (type == 0x11) {                                      // symbol table: B-tree, local heap
        group_btree(u(body, 8));
        local_heap(u(body + 8, 8));
      }
      if (type == 0x08 && valid(body, 2) && b_[body] == 3 && b_[body + 1] == 2)
        chunk_btree(u(body + 3, 8), b_[body + 2]);
      at = body + length;
    }
  }
  // A link message (new-style compact groups, as the run file's root once it holds external
  // links): version, flags, optional link type, creation order and charset, the name, then for a
  // hard link the object header's address.
  void link(uint64_t at, uint64_t length) {
    if (!valid(at, length) || length < 3 || b_[at] != 1) return;
    const uint8_t flags = uint8_t(b_[at + 1]);
    uint64_t p = at + 2, type = 0;
    if (flags & 0x08) type = uint8_t(b_[p++]);
    if (flags & 0x04) p += 8;
    if (flags & 0x10) p += 1;
    const int size_bytes = 1 << (flags & 0x03);
    const uint64_t name = u(p, size_bytes);
    p += uint64_t(size_bytes) + name;
    if (type == 0 && p + 8 <= at + length) object_header(u(p, 8));
  }
  void group_btree(uint64_t at) {
    if (!valid(at, 24) || std::memcmp(b_.data() + at, "TREE", 4) != 0 || !seen_.insert(at).second) return;
    const uint64_t level = uint8_t(b_[at + 5]), used = u(at + 6, 2);
    add(at, 24 + used * 16 + 8, "group B-tree node");
    for (uint64_t k = 0; k < used; ++k) {
      const uint64_t child = u(at + 24 + 8 + 16 * k, 8);
      if (level > 0) group_btree(child);
      else symbol_node(child);
    }
  }
  void symbol_node(uint64_t at) {
    if (!valid(at, 8) || std::memcmp(b_.data() + at, "SNOD", 4) != 0 || !seen_.insert(at).second) return;
    const uint64_t symbols = u(at + 6, 2);
    add(at, 8 + symbols * 40, "symbol table node");
    for (uint64_t k = 0; k < symbols; ++k) object_header(u(at + 8 + 40 * k + 8, 8));
  }
  void local_heap(uint64_t at) {
    if (!valid(at, 32) || std::memcmp(b_.data() + at, "HEAP", 4) != 0 || !seen_.insert(at).second) return;
    add(at, 32, "local heap");
    add(u(at + 24, 8), u(at + 8, 8), "local heap data");
  }
  // Keys of a chunk B-tree node: chunk size u32, filter mask u32, (rank + 1) u64 offsets.
  void chunk_btree(uint64_t at, uint64_t rank_plus_one) {
    if (!valid(at, 24) || std::memcmp(b_.data() + at, "TREE", 4) != 0 || !seen_.insert(at).second) return;
    const uint64_t key = 8 + 8 * rank_plus_one, level = uint8_t(b_[at + 5]), used = u(at + 6, 2);
    add(at, 24 + used * (key + 8) + key, "chunk index node");
    for (uint64_t k = 0; k < used && level > 0; ++k) chunk_btree(u(at + 24 + key + (key + 8) * k, 8), rank_plus_one);
  }

  const std::vector<char>& b_;
  std::vector<Region> regions_;
  std::set<uint64_t> seen_;
};

// Rebuilds the group `name` of an open file as an old-style group (a symbol table: B-tree, symbol
// nodes, local heap), as samebits wrote every group before it kept links compact: its datasets
// copied over, its attributes copied byte for byte.
inline void old_style_group(hid_t file, const std::string& name) {
  const std::string rebuilt = name + ".old";
  const hid_t src = H5Gopen2(file, name.c_str(), H5P_DEFAULT);
  const hid_t dst = H5Gcreate2(file, rebuilt.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  REQUIRE((src >= 0 && dst >= 0));
  H5G_info_t info;
  REQUIRE(H5Gget_info(src, &info) >= 0);
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    char member[256] = {0};
    REQUIRE(H5Lget_name_by_idx(src, ".", H5_INDEX_NAME, H5_ITER_INC, i, member, sizeof member, H5P_DEFAULT) > 0);
    REQUIRE(H5Ocopy(src, member, dst, member, H5P_DEFAULT, H5P_DEFAULT) >= 0);
  }
  H5O_info_t object;
  REQUIRE(H5Oget_info2(src, &object, H5O_INFO_NUM_ATTRS) >= 0);
  for (hsize_t i = 0; i < object.num_attrs; ++i) {
    const hid_t a = H5Aopen_by_idx(src, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT);
    char attr[256] = {0};
    REQUIRE((a >= 0 && H5Aget_name(a, sizeof attr, attr) > 0));
    const hid_t type = H5Aget_type(a), space = H5Aget_space(a);
    std::vector<char> value(std::max<hsize_t>(1, H5Aget_storage_size(a)));
    REQUIRE(H5Aread(a, type, value.data()) >= 0);
    const hid_t b = H5Acreate2(dst, attr, type, space, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE((b >= 0 && H5Awrite(b, type, value.data()) >= 0));
    H5Aclose(b), H5Sclose(space), H5Tclose(type), H5Aclose(a);
  }
  H5Gclose(src), H5Gclose(dst);
  REQUIRE(H5Ldelete(file, name.c_str(), H5P_DEFAULT) >= 0);
  REQUIRE(H5Lmove(file, rebuilt.c_str(), file, name.c_str(), H5P_DEFAULT, H5P_DEFAULT) >= 0);
}

// A copy of a sealed samebits file as earlier samebits wrote them: /tensors and /series old-style
// groups, and string attributes (root, /tensors, /store) variable-length, as h5py writes them too:
// their symbol tables and global heap are then in the file for the fuzzer to damage.
inline void vlen_string_copy(const std::string& source, const std::string& path) {
  copy_run(source, path);
  sb::run::unseal_file(path);
  std::map<std::string, std::map<std::string, std::string>> strings;  // object → attribute → value
  {
    const sb::h5::File f = sb::h5::File::open(path);
    for (const char* name : {"/", "/tensors", "/store"}) {
      const std::string object = name;
      if (object != "/" && !f.has(object)) continue;
      const sb::h5::Group g = f.group(object);
      for (const std::string& a : g.attr_names()) {
        if (attribute_text(g, a).rfind("s:", 0) == 0) strings[object][a] = g.attr_string(a);
      }
    }
  }
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  REQUIRE(file >= 0);
  old_style_group(file, "/tensors");
  old_style_group(file, "/series");
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  const hid_t space = H5Screate(H5S_SCALAR);
  for (const auto& [object, attributes] : strings) {
    const hid_t g = H5Oopen(file, object.c_str(), H5P_DEFAULT);
    for (const auto& [name, value] : attributes) {
      REQUIRE(H5Adelete(g, name.c_str()) >= 0);
      const hid_t a = H5Acreate2(g, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
      const char* text = value.c_str();
      REQUIRE(H5Awrite(a, type, &text) >= 0);
      H5Aclose(a);
    }
    H5Oclose(g);
  }
  H5Sclose(space);
  H5Tclose(type);
  REQUIRE(H5Fclose(file) >= 0);
  sb::run::seal_file(path);
}

// `count` mutants of the HDF5 file content `good`: 1 to 3 changes each, inside metadata regions
// taken in turn by kind; keep(i, bytes, what) stores each.
inline void mutate_metadata(const std::vector<char>& good, int count, uint64_t seed,
                            const std::function<void(int, const std::vector<char>&, const std::string&)>& keep) {
  const MetadataMap map(good);
  std::map<std::string, std::vector<Region>> by_kind;
  for (const Region& r : map.regions()) by_kind[r.kind].push_back(r);
  std::vector<std::string> kinds;
  for (const auto& [k, v] : by_kind) kinds.push_back(k);
  std::mt19937_64 rng(seed);
  const uint64_t interesting[] = {0,
                                  1,
                                  2,
                                  0x7f,
                                  0x80,
                                  0xff,
                                  0x7fff,
                                  0xffff,
                                  0x7fffffff,
                                  0xffffffff,
                                  uint64_t(good.size()),
                                  uint64_t(good.size()) + 1,
                                  uint64_t(1) << 32,
                                  uint64_t(1) << 62,
                                  ~uint64_t(0)};
  for (int i = 0; i < count; ++i) {
    std::vector<char> bytes = good;
    const std::string& kind = kinds[std::size_t(i) % kinds.size()];
    const std::vector<Region>& regions = by_kind[kind];
    std::string what = kind + ":";
    const int changes = 1 + int(rng() % 3);
    for (int c = 0; c < changes; ++c) {
      const Region& r = regions[rng() % regions.size()];
      const std::size_t at = r.at + std::size_t(rng() % r.size);
      const int width = std::array<int, 4>{1, 2, 4, 8}[rng() % 4];
      const uint64_t value = rng() % 3 == 0 ? rng() : interesting[rng() % std::size(interesting)];
      for (int k = 0; k < width && at + std::size_t(k) < bytes.size(); ++k) {
        bytes[at + std::size_t(k)] =
            char(width == 1 && rng() % 2 ? uint8_t(bytes[at]) ^ uint8_t(1 + rng() % 255) : uint8_t(value >> (8 * k)));
      }
      what += " " + std::to_string(width) + " bytes at " + std::to_string(at);
    }
    if (bytes == good) bytes[regions.front().at] = char(bytes[regions.front().at] ^ 0x40);
    keep(i, bytes, what);
  }
}

// `count` metadata mutants of `source` (a sealed file), sealed again. Written to
// <dir>/<prefix><i>.h5.
inline std::vector<Variant> metadata_mutants(const std::string& source, const std::string& dir,
                                             const std::string& prefix, int count, uint64_t seed) {
  std::vector<char> good = read_bytes(source);
  good.resize(good.size() - sb::run::kSealBytes);
  std::vector<Variant> out;
  mutate_metadata(good, count, seed, [&](int i, const std::vector<char>& bytes, const std::string& what) {
    const std::string path = dir + "/" + prefix + std::to_string(i) + ".h5";
    copy_run(source, path, &bytes);  // a run file's mutant keeps its store beside it
    sb::run::seal_file(path);
    out.push_back({path, what, false});
  });
  return out;
}

// What the fuzzer saw, over every command run.
struct FuzzCounts {
  int commands = 0, read = 0, refused = 0, unsafe = 0;  // unsafe: refused as "could not be read safely"
  int signals = 0, sanitizer = 0, hangs = 0, unclear = 0;
  std::string first_problem;
  std::map<std::string, int> classes;  // problem (addresses and pids left out) · mutated structure → count
  std::string summary() const {
    return std::to_string(commands) + " commands: " + std::to_string(read) + " read, " + std::to_string(refused) +
           " refused (" + std::to_string(unsafe) + " of them by a failed reader process); " + std::to_string(signals) +
           " signals, " + std::to_string(sanitizer) + " sanitizer reports, " + std::to_string(hangs) + " hangs, " +
           std::to_string(unclear) + " unclear answers";
  }
  std::string class_table() const {
    std::string out;
    for (const auto& [what, n] : classes) out += "\n  " + std::to_string(n) + " x " + what;
    return out;
  }
};

// A problem without what differs from one mutant to the next (pids, addresses, sizes in hex).
inline std::string problem_class(const std::string& problem, const Result& r, const Variant& v) {
  std::string said;
  const std::size_t at = r.output.find("it reported: ");
  if (at != std::string::npos) said = r.output.substr(at + 13, r.output.find('\n', at) - at - 13);
  else if (r.output.find("Sanitizer") != std::string::npos) said = r.output.substr(r.output.find("Sanitizer"), 160);
  std::string out;
  for (std::size_t i = 0; i < said.size(); ++i) {
    if (said.compare(i, 2, "0x") == 0) {
      out += "0x?";
      i += 2;
      while (i < said.size() && std::isxdigit(static_cast<unsigned char>(said[i]))) ++i;
      --i;
    } else if (said[i] == '=' && i + 1 < said.size() && std::isdigit(static_cast<unsigned char>(said[i + 1]))) {
      while (i + 1 < said.size() && said[i + 1] != '=') ++i;
    } else {
      out += said[i];
    }
  }
  return problem + ": " + out + " [" + v.what.substr(0, v.what.find(':')) + "]";
}

inline void count_answer(const Result& r, const std::string& command, const Variant& v, bool different_allowed,
                         FuzzCounts& counts) {
  ++counts.commands;
  const std::string prefix = "samebits " + command + ": error: ";
  const std::size_t error = r.output.find(prefix);
  std::string problem;
  if (r.timed_out) ++counts.hangs, problem = "hang";
  else if (r.signal != 0) ++counts.signals, problem = "signal " + std::to_string(r.signal);
  else if (r.output.find("Sanitizer") != std::string::npos || r.output.find("runtime error") != std::string::npos) {
    ++counts.sanitizer, problem = "sanitizer report";
  } else if (r.code == 0 || (different_allowed && r.code == 1)) {
    ++counts.read;
  } else if (r.code == 2 && error != std::string::npos && line_count(r.output.substr(error)) == 1 &&
             r.output.find("unexpected error") == std::string::npos) {
    ++counts.refused;
    if (r.output.find("could not be read safely") != std::string::npos) ++counts.unsafe;
  } else {
    ++counts.unclear, problem = "unclear answer";
  }
  if (!problem.empty()) ++counts.classes[problem_class(problem, r, v)];
  if (!problem.empty() && counts.first_problem.empty()) {
    counts.first_problem = command + " on " + v.path + " (" + v.what + "): " + problem + ": " + describe(r);
  }
}

// Every mutant through inspect and diff; every `deep_every`-th also through verify --steps 2 and
// train --resume (the run file in a copy of the finished run's folder: the resume reads it, finds
// the run finished and stops).
inline void fuzz_commands(const std::vector<Variant>& mutants, const Sources& s, const std::string& work,
                          int deep_every, FuzzCounts& counts) {
  const SpawnOptions limited{0, "", 120};
  for (std::size_t i = 0; i < mutants.size(); ++i) {
    const Variant& v = mutants[i];
    count_answer(run({"inspect", v.path}, limited), "inspect", v, false, counts);
    count_answer(run({"diff", v.path, s.finished}, limited), "diff", v, true, counts);
    if (deep_every > 0 && i % std::size_t(deep_every) == 0) {
      count_answer(run({"verify", v.path, "--steps", "2"}, limited), "verify", v, true, counts);
      const std::string dir = resume_dir(s, work, v.path);
      count_answer(run({"train", "run.ini", "--out", "run.h5", "--resume"}, SpawnOptions{0, dir, 120}), "train", v,
                   false, counts);
    }
  }
}

// Sets the content hash the index of the run file at `run_path` records for the file of `step`.
inline void record_store_digest(const std::string& run_path, int64_t step, uint64_t digest) {
  sb::run::unseal_file(run_path);
  {
    sb::h5::File f = sb::h5::File::open(run_path, sb::h5::Mode::read_write);
    sb::h5::Dataset steps = f.dataset("store/step");
    const std::vector<int64_t> all = steps.read<int64_t>();
    const auto at = std::find(all.begin(), all.end(), step);
    REQUIRE(at != all.end());
    f.dataset("store/digest").write_rows<uint64_t>(uint64_t(at - all.begin()), std::vector<uint64_t>{digest});
    steps = sb::h5::Dataset();
    f.close();
  }
  sb::run::seal_file(run_path);
}

// Mutants of the stopped run's newest checkpoint under --resume: a clear error or a fall-back.
inline void fuzz_checkpoints(const std::vector<Variant>& mutants, const Sources& s, const std::string& work,
                             FuzzCounts& counts) {
  for (const Variant& v : mutants) {
    const std::string dir = resume_dir(s, work, s.stopped, v.path);
    // The run file's index records the mutant's content hash (as a forger would), so that the
    // mutant reaches HDF5's decoders instead of being refused by its hash.
    record_store_digest(dir + "/run.h5", 12, sb::run::check_seal(v.path));
    const Result r = run({"train", "run.ini", "--out", "run.h5", "--resume"}, SpawnOptions{0, dir, 120});
    count_answer(r, "train", v, false, counts);
    if (r.code == 0 && r.output.find("is not usable") != std::string::npos) {
      CHECK_MESSAGE(content_difference(s.finished, dir + "/run.h5") == "", v.what);
    }
  }
}

// The mutants of a test: of the finished run (as written, and with variable-length strings) and
// of the stopped run's newest checkpoint; every metadata kind is covered.
struct Mutants {
  std::vector<Variant> runs, checkpoints;
};

inline Mutants make_mutants(const Sources& s, const std::string& dir, int runs, int checkpoints, uint64_t seed) {
  Mutants m;
  const std::string vlen = dir + "/vlen.h5";
  vlen_string_copy(s.finished, vlen);
  REQUIRE(run({"inspect", vlen}).code == 0);  // the old string layout reads
  std::vector<char> content = read_bytes(vlen);
  content.resize(content.size() - sb::run::kSealBytes);
  const std::set<std::string> kinds = MetadataMap(content).kinds();
  for (const char* k : {"object header", "datatype message", "dataspace message", "layout message", "attribute message",
                        "group B-tree node", "symbol table node", "local heap", "chunk index node", "global heap"}) {
    CHECK_MESSAGE(kinds.count(k) == 1, "no ", std::string(k), " found in ", vlen);
  }
  m.runs = metadata_mutants(s.finished, dir, "run", runs - runs / 4, seed);
  const auto old = metadata_mutants(vlen, dir, "vlen", runs / 4, seed + 1);
  m.runs.insert(m.runs.end(), old.begin(), old.end());
  m.checkpoints = metadata_mutants(sb::run::store_file(s.stopped, sb::run::StoreEntry{12, sb::run::kStateBit, 0, 0}),
                                   dir, "ckpt", checkpoints, seed + 2);
  return m;
}

}  // namespace sbt
