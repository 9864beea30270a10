// The resealing fuzzer (test_hostile_files.hpp) on training data from others: HDF5 token files as
// h5py and HDF5's C API write them by default (contiguous uint16 under a group, chunked int64 at
// the root), their metadata damaged the same way as a run file's; llm.c shards with damaged header
// fields, cut short, grown or with tokens out of the vocabulary. Through `data inspect` and, every
// few mutants, `train` with the file as its training and validation data: each is read or refused
// with one clear line (exit 2); never a signal, a sanitizer report or a hang.
#pragma once
#include "integration/test_hostile_files.hpp"
#include "samebits/data/shards.hpp"
#include "support/token_files.hpp"

namespace sbt {

// A token file and how a command names it ("FILE.h5:/train/tokens", or the shard's path).
struct TokenSource {
  std::string path, spec, format;  // format: data.source
};

// The token files the mutants are made from: 5000 tokens < 64 (the tiny config's vocabulary).
inline std::vector<TokenSource> token_sources(const std::string& dir) {
  std::vector<int32_t> tokens(5000);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7919 + i / 13) % 64);
  const std::string contiguous = dir + "/contiguous.h5", chunked = dir + "/chunked.h5", shard = dir + "/shard.bin";
  write_token_h5(contiguous, "/train/tokens", H5T_STD_U16LE, tokens);
  write_token_h5(chunked, "/tokens", H5T_STD_I64LE, tokens, 512);
  sb::data::ShardWriter w(shard, 1);
  w.append(tokens.data(), tokens.size());
  w.finish();
  return {{contiguous, contiguous + ":/train/tokens", "hdf5"},
          {chunked, chunked + ":/tokens", "hdf5"},
          {shard, shard, "shards"}};
}

// `count` mutants of a shard: a header field (magic, version, count) set to an interesting value,
// the file cut short or grown, a token replaced by one outside the vocabulary — in turn.
inline std::vector<Variant> shard_mutants(const std::string& source, const std::string& dir, int count, uint64_t seed) {
  const std::vector<char> good = read_bytes(source);
  std::mt19937_64 rng(seed);
  const int32_t interesting[] = {0,          1,
                                 2,          3,
                                 -1,         -5000,
                                 4999,       5001,
                                 0x7fffffff, int32_t(0x80000000),
                                 20240520,   int32_t(sb::data::kShardHeaderBytes)};
  std::vector<Variant> out;
  for (int i = 0; i < count; ++i) {
    std::vector<char> bytes = good;
    std::string what;
    switch (i % 4) {
      case 0: {
        const int field = int(rng() % 3);
        const int32_t v = interesting[rng() % std::size(interesting)];
        std::memcpy(bytes.data() + 4 * field, &v, 4);
        what = "header int " + std::to_string(field) + " = " + std::to_string(v);
        break;
      }
      case 1:
        bytes.resize(rng() % bytes.size());
        what = "cut to " + std::to_string(bytes.size()) + " bytes";
        break;
      case 2:
        bytes.resize(bytes.size() + 1 + rng() % 4096, char(rng()));
        what = "grown to " + std::to_string(bytes.size()) + " bytes";
        break;
      default: {
        const std::size_t at = sb::data::kShardHeaderBytes + 2 * (rng() % 5000);
        const uint16_t v = uint16_t(64 + rng() % (65536 - 64));
        std::memcpy(bytes.data() + at, &v, 2);
        what = "token " + std::to_string(v) + " at byte " + std::to_string(at);
      }
    }
    if (bytes == good) bytes[0] = char(bytes[0] ^ 0x40);
    const std::string path = dir + "/shard" + std::to_string(i) + ".bin";
    write_bytes(path, bytes);
    out.push_back({path, "shard: " + what, true});
  }
  return out;
}

// `count` metadata mutants of an HDF5 token file (no seal: token files have none).
inline std::vector<Variant> token_h5_mutants(const std::string& source, const std::string& dir,
                                             const std::string& prefix, int count, uint64_t seed) {
  std::vector<Variant> out;
  mutate_metadata(read_bytes(source), count, seed, [&](int i, const std::vector<char>& bytes, const std::string& what) {
    const std::string path = dir + "/" + prefix + std::to_string(i) + ".h5";
    write_bytes(path, bytes);
    out.push_back({path, what, false});
  });
  return out;
}

// 2 steps of the tiny experiment `ini` on the token file `spec` (data.source `format`) as training
// and validation data, its run file at `out`.
inline Result train_on(const std::string& spec, const std::string& format, const std::string& ini,
                       const std::string& out) {
  return run({"train", ini, "--out", out, "--train.steps", "2", "--data.source", format, "--data.path", spec,
              "--data.val_path", spec},
             SpawnOptions{0, "", 120});
}

// Each mutant of `source` (a token file of token_sources) through data inspect; every
// `deep_every`-th also through 2 steps of training on it (as training and validation data).
inline void fuzz_token_files(const std::vector<Variant>& mutants, const TokenSource& source, const std::string& ini,
                             const std::string& work, int deep_every, FuzzCounts& counts) {
  const SpawnOptions limited{0, "", 120};
  for (std::size_t i = 0; i < mutants.size(); ++i) {
    const Variant& v = mutants[i];
    const std::string spec = v.path + source.spec.substr(source.path.size());
    count_answer(run({"data", "inspect", spec}, limited), "data", v, false, counts);
    if (deep_every > 0 && i % std::size_t(deep_every) == 0) {
      const std::string out = work + "/train_" + fs::path(v.path).stem().string() + ".h5";
      count_answer(train_on(spec, source.format, ini, out), "train", v, false, counts);
    }
  }
}

// Mutants of every token source: `h5` of each HDF5 file, `shards` of the shard; all through
// fuzz_token_files. Returns the number of mutants.
inline int fuzz_token_sources(const std::string& root, int h5, int shards, int deep_every, uint64_t seed,
                              FuzzCounts& counts) {
  const std::string dir = root + "/tokens";
  fs::create_directories(dir);
  const std::string ini = dir + "/run.ini";
  write_text(ini, tiny_config());
  const std::vector<TokenSource> sources = token_sources(dir);
  for (const TokenSource& s : sources) {  // the unmutated files read
    REQUIRE(run({"data", "inspect", s.spec}).code == 0);
    const Result trained = train_on(s.spec, s.format, ini, dir + "/train_" + fs::path(s.path).stem().string() + ".h5");
    REQUIRE_MESSAGE(trained.code == 0, describe(trained));
  }
  const std::vector<Variant> contiguous = token_h5_mutants(sources[0].path, dir, "contiguous", h5, seed);
  const std::vector<Variant> chunked = token_h5_mutants(sources[1].path, dir, "chunked", h5, seed + 1);
  const std::vector<Variant> shard = shard_mutants(sources[2].path, dir, shards, seed + 2);
  fuzz_token_files(contiguous, sources[0], ini, dir, deep_every, counts);
  fuzz_token_files(chunked, sources[1], ini, dir, deep_every, counts);
  fuzz_token_files(shard, sources[2], ini, dir, deep_every, counts);
  return int(contiguous.size() + chunked.size() + shard.size());
}

}  // namespace sbt
