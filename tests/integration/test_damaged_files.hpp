// Damaged run files and checkpoints for test_damaged_files (default suite) and its slow sibling:
// real tiny runs, then variants — truncated at random offsets, random bytes flipped, edited with
// the h5 layer and sealed again (datasets of the wrong dtype or shape, attributes missing or of the
// wrong type, inconsistent tables), edited without sealing — and the checks that inspect, diff,
// verify and --resume answer each with a clear error (exit 2, one line) or a correct answer, and
// never crash.
#pragma once
#include <doctest/doctest.h>

#include <functional>
#include <random>

#include "integration/test_cli_support.hpp"
#include "samebits/core/io/checkpoint.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/io/run_seal.hpp"
#include "samebits/core/io/run_store.hpp"

namespace sbt {

struct Variant {
  std::string path;
  std::string what;  // how it was damaged, for messages
  bool byte_damage;  // truncated, flipped or edited without sealing: must be refused as damaged
};

// A test's two source runs, each trained from run.ini into run.h5 in its own folder (so their
// recorded run.out is the same): `finished` (20 steps, snapshots, final state) and `stopped`
// (stopped after step 12: states 10 and 12 in its run.store/). Resuming `stopped` must give
// `finished`'s content.
struct Sources {
  std::string ini, finished, stopped;
};

inline Sources make_sources(const TempDir& root) {
  Sources s;
  const std::string config = tiny_config("checkpoint_every = 5\nsnapshot_steps = 0, 10\n");
  const auto train = [&](const std::string& name, std::vector<std::string> extra) {
    const std::string dir = root / name;
    fs::create_directories(dir);
    write_text(dir + "/run.ini", config);
    std::vector<std::string> args{"train", "run.ini", "--out", "run.h5"};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = run(args, SpawnOptions{0, dir});
    REQUIRE_MESSAGE(r.code == 0, describe(r));
    return dir + "/run.h5";
  };
  s.finished = train("finished", {});
  s.stopped = train("stopped", {"--stop-after", "12"});
  s.ini = root / "stopped/run.ini";
  return s;
}

// Edits a copy of `source` at `path` with the h5 layer; sealed again unless `reseal` is false.
inline void edited_copy(const std::string& source, const std::string& path,
                        const std::function<void(sb::h5::File&)>& edit, bool reseal = true) {
  copy_run(source, path);
  sb::run::unseal_file(path);
  {
    sb::h5::File f = sb::h5::File::open(path, sb::h5::Mode::read_write);
    edit(f);
    f.close();
  }
  if (reseal) sb::run::seal_file(path);
}

// `count` byte-damaged copies of `source` (half truncated at a random offset, half with 1-4
// random bytes changed), named <dir>/<prefix><i>.h5.
inline std::vector<Variant> byte_variants(const std::string& source, const std::string& dir, const std::string& prefix,
                                          int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<char> good = read_bytes(source);
  std::vector<Variant> out;
  for (int i = 0; i < count; ++i) {
    std::vector<char> bytes = good;
    std::string what;
    if (i % 2 == 0) {
      const size_t keep = size_t(rng() % good.size());
      bytes.resize(keep);
      what = "truncated to " + std::to_string(keep) + " bytes";
    } else {
      const int flips = 1 + int(rng() % 4);
      what = "bytes changed at";
      for (int k = 0; k < flips; ++k) {
        const size_t at = size_t(rng() % good.size());
        bytes[at] = char(bytes[at] ^ char(1 + rng() % 255));
        what += " " + std::to_string(at);
      }
    }
    const std::string path = dir + "/" + prefix + std::to_string(i) + ".h5";
    copy_run(source, path, &bytes);
    out.push_back({path, what, true});
  }
  return out;
}

// Copies of a run file edited with the h5 layer: every series column with the wrong dtype and with
// the wrong shape, every root attribute removed, attributes of the wrong type, inconsistent
// tables, store indexes; and a few edits left unsealed.
inline std::vector<Variant> structure_variants(const std::string& source, const std::string& dir,
                                               const std::string& prefix) {
  using sb::h5::DType;
  std::vector<Variant> out;
  int n = 0;
  const auto add = [&](const std::string& what, const std::function<void(sb::h5::File&)>& edit, bool reseal = true) {
    const std::string path = dir + "/" + prefix + std::to_string(n++) + ".h5";
    edited_copy(source, path, edit, reseal);
    out.push_back({path, what, !reseal});
  };
  const bool recorded_qk = sb::h5::File::open(source).has("series/qk_max_logit");
  const bool recorded_moe = sb::h5::File::open(source).has("series/moe_tokens");
  for (const sb::run::SeriesColumn& c : sb::run::series_columns()) {
    const std::string p(c.path);
    if (c.qk_clip && !recorded_qk) continue;  // QK-clip's columns: only in runs with optim.qk_clip > 0
    if (c.moe && !recorded_moe) continue;     // the routing columns: only in runs with MoE blocks
    add(p + " of the wrong dtype", [&](sb::h5::File& f) {
      const sb::h5::Dims shape = f.dataset(p).shape();
      f.remove(p);
      f.create_dataset(p, c.dtype == DType::f32 ? DType::f64 : DType::f32, shape);
    });
    add(p + " of the wrong shape", [&](sb::h5::File& f) {
      sb::h5::Dims shape = f.dataset(p).shape();
      shape.back() += 1;
      f.remove(p);
      f.create_dataset(p, c.dtype, shape);
    });
  }
  const std::vector<std::string> attributes = sb::h5::File::open(source).attr_names();
  for (const std::string& a : attributes) {
    add("attribute " + a + " missing", [&](sb::h5::File& f) { f.remove_attr(a); });
  }
  for (const char* a : {"status", "config", "experiment_id", "backend", "time_sessions"}) {
    add(std::string("attribute ") + a + " of the wrong type", [&](sb::h5::File& f) { f.set_attr(a, int64_t(7)); });
  }
  for (const char* a : {"steps", "format_version", "threads"}) {
    add(std::string("attribute ") + a + " of the wrong type", [&](sb::h5::File& f) { f.set_attr(a, "seven"); });
  }
  add("status 'exploded'", [](sb::h5::File& f) { f.set_attr("status", "exploded"); });
  add("format_version 1", [](sb::h5::File& f) { f.set_attr("format_version", int64_t(1)); });
  add("format_version 3", [](sb::h5::File& f) { f.set_attr("format_version", int64_t(3)); });
  add("steps 10 (fewer than recorded)", [](sb::h5::File& f) { f.set_attr("steps", int64_t(10)); });
  add("steps -1", [](sb::h5::File& f) { f.set_attr("steps", int64_t(-1)); });
  add("config that does not parse", [](sb::h5::File& f) { f.set_attr("config", "[model]\nn_embd = lots\n"); });
  add("another experiment id", [](sb::h5::File& f) { f.set_attr("experiment_id", "0123456789abcdef"); });
  add("series/step not 1, 2, ...", [](sb::h5::File& f) {
    sb::h5::Dataset d = f.dataset("series/step");
    d.write_rows<int64_t>(3, std::vector<int64_t>{99});
  });
  add("series cut to different lengths", [](sb::h5::File& f) { f.dataset("series/loss").truncate(5); });
  add("tensor names missing one", [](sb::h5::File& f) {
    std::string names = f.group("tensors").attr_string("names");
    f.group("tensors").set_attr("names", names.substr(0, names.rfind('\n')));
  });
  add("tensor names repeated", [](sb::h5::File& f) {
    std::string names = f.group("tensors").attr_string("names");
    f.group("tensors").set_attr("names", "wte\n" + names.substr(names.find('\n') + 1).replace(0, 3, "wte"));
  });
  add("tensor offsets overlapping", [](sb::h5::File& f) {
    sb::h5::Dataset d = f.dataset("tensors/offset");
    std::vector<int64_t> v = d.read<int64_t>();
    v[2] = v[1];
    d.write<int64_t>(v);
  });
  add("tensor numel not the shape's", [](sb::h5::File& f) {
    sb::h5::Dataset d = f.dataset("tensors/numel");
    std::vector<int64_t> v = d.read<int64_t>();
    v[0] += 1;
    d.write<int64_t>(v);
  });
  add("tensor shape huge", [](sb::h5::File& f) {
    sb::h5::Dataset d = f.dataset("tensors/shape");
    std::vector<int64_t> v = d.read<int64_t>();
    v[0] = int64_t(1) << 40;
    v[1] = int64_t(1) << 40;
    d.write<int64_t>(v);
  });
  add("tensors group missing", [](sb::h5::File& f) { f.remove("tensors"); });
  add("series group missing", [](sb::h5::File& f) { f.remove("series"); });
  // The store index: each entry names one file by step, kind and content hash.
  const auto edit_index = [&](const std::string& what, const char* column, auto value) {
    add("store index: " + what, [=](sb::h5::File& f) {
      sb::h5::Dataset d = f.dataset(std::string("store/") + column);
      using T = decltype(value);
      std::vector<T> v = d.read<T>();
      v.back() = value;
      d.write<T>(v);
    });
  };
  edit_index("last step beyond the recorded ones", "step", int64_t(99));
  edit_index("last step before the first", "step", int64_t(-1));
  edit_index("unknown kind bits", "kind", uint8_t(9));
  edit_index("kept bit on a snapshot", "kind", uint8_t(5));
  edit_index("a snapshot where a state is", "kind", uint8_t(1));
  edit_index("another content hash", "digest", uint64_t(0x0123456789abcdefULL));
  add("store index: one column short", [](sb::h5::File& f) {
    std::vector<uint8_t> kinds = f.dataset("store/kind").read<uint8_t>();
    kinds.pop_back();
    f.remove("store/kind");
    f.write_dataset<uint8_t>("store/kind", kinds);
  });
  add("store index: steps of the wrong dtype", [](sb::h5::File& f) {
    const sb::h5::Dims shape = f.dataset("store/step").shape();
    f.remove("store/step");
    f.create_dataset("store/step", DType::f64, shape);
  });
  add("store index missing", [](sb::h5::File& f) { f.remove("store"); });
  add(
      "unsealed: a loss changed",
      [](sb::h5::File& f) { f.dataset("series/loss").write_rows<float>(0, std::vector<float>{1.0f}); }, false);
  add(
      "unsealed: an attribute added", [](sb::h5::File& f) { f.set_attr("note", "edited"); }, false);
  add(
      "unsealed: nothing changed", [](sb::h5::File&) {}, false);
  return out;
}

inline int line_count(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

// A clear error: exit 2 and one line naming the command. A correct answer: exit 0 (or 1 for
// "different" where the command has it). Never a signal.
inline void check_answer(const Result& r, const std::string& command, const Variant& v, bool different_allowed) {
  INFO(command, " on ", v.path, " (", v.what, "): ", describe(r));
  REQUIRE(r.signal == 0);
  CHECK((r.code == 0 || r.code == 2 || (different_allowed && r.code == 1)));
  if (r.code == 2) {
    CHECK(r.output.find("samebits " + command + ": error: ") != std::string::npos);
    CHECK(r.output.find("unexpected error") == std::string::npos);
    CHECK(line_count(r.output.substr(r.output.find("samebits " + command + ": error: "))) == 1);
  }
  if (v.byte_damage) {
    CHECK(r.code == 2);
    CHECK((r.output.find("is damaged") != std::string::npos ||
           r.output.find("not written by samebits") != std::string::npos));
  }
}

// inspect and diff (against the reference) on every variant; verify on every `verify_every`-th.
inline void check_readers(const std::vector<Variant>& variants, const std::string& ref, int verify_every) {
  for (size_t i = 0; i < variants.size(); ++i) {
    const Variant& v = variants[i];
    check_answer(run({"inspect", v.path}), "inspect", v, false);
    check_answer(run({"diff", v.path, ref}), "diff", v, true);
    if (verify_every > 0 && i % size_t(verify_every) == 0) {
      check_answer(run({"verify", v.path, "--steps", "12"}), "verify", v, true);
    }
  }
}

// A fresh work/resume folder for --resume of the stopped run: its config, `run_file` as run.h5,
// the stopped run's store, and `state12` (when given) in place of its newest state.
inline std::string resume_dir(const Sources& s, const std::string& work, const std::string& run_file,
                              const std::string& state12 = "") {
  const std::string dir = work + "/resume";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(s.ini, dir + "/run.ini");
  fs::copy_file(run_file, dir + "/run.h5");
  fs::copy(sb::run::store_dir(s.stopped), dir + "/run.store");
  if (!state12.empty()) {
    fs::copy_file(state12, dir + "/run.store/state_step_000012.h5", fs::copy_options::overwrite_existing);
  }
  return dir;
}

// --resume of the stopped run with its run file replaced by each variant: a clear error that
// changes nothing, or (when the damage is harmless to resuming) the reference content.
inline void check_resume_run_file(const Sources& s, const std::vector<Variant>& variants, const std::string& work) {
  for (const Variant& v : variants) {
    const std::string dir = resume_dir(s, work, v.path);
    const std::vector<char> before = read_bytes(dir + "/run.h5");
    const Result r = run({"train", "run.ini", "--out", "run.h5", "--resume"}, SpawnOptions{0, dir});
    check_answer(r, "train", v, false);
    if (r.code == 0) {
      CHECK_MESSAGE(content_difference(s.finished, dir + "/run.h5") == "", v.what);
    } else {
      CHECK_MESSAGE(read_bytes(dir + "/run.h5") == before, v.what);
      CHECK(fs::exists(dir + "/run.store/state_step_000012.h5"));
    }
  }
}

// --resume of the stopped run with its newest checkpoint replaced by each variant: the previous
// checkpoint is used (and the output says why), the result is the reference content.
inline void check_resume_checkpoint(const Sources& s, const std::vector<Variant>& variants, const std::string& work) {
  for (const Variant& v : variants) {
    const std::string dir = resume_dir(s, work, s.stopped, v.path);
    const Result r = run({"train", "run.ini", "--out", "run.h5", "--resume"}, SpawnOptions{0, dir});
    INFO(v.what, ": ", describe(r));
    REQUIRE(r.code == 0);
    CHECK(r.output.find("checkpoint run.store/state_step_000012.h5 is not usable") != std::string::npos);
    CHECK(r.output.find("at step 10 (from checkpoint run.store/state_step_000010.h5)") != std::string::npos);
    CHECK(content_difference(s.finished, dir + "/run.h5") == "");
  }
}

}  // namespace sbt
