// samebits data inspect|synth: look at a token file (format, count, token range, a decoded sample)
// or the synthetic language (its statistics), and write the synthetic language as an llm.c shard.
// The shard written for (seed, vocab, split, tokens) is the same file on every machine.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <vector>

#include "samebits/cli/arguments.hpp"
#include "samebits/cli/command.hpp"
#include "samebits/core/io/token_files.hpp"
#include "samebits/data/hdf5_tokens.hpp"
#include "samebits/data/ngram.hpp"
#include "samebits/data/shards.hpp"
#include "samebits/data/synthetic.hpp"
#include "samebits/data/text_file.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

using data::TokenSource;

constexpr const char* kUsage =
    "usage: samebits data inspect FILE [--sample N]\n"
    "       samebits data inspect synthetic [--vocab V] [--seed S] [--doc-len L] [--tokens N]\n"
    "       samebits data synth --out FILE.bin --tokens N [--seed S] [--vocab V] [--doc-len L]\n"
    "                           [--split train|validation]\n"
    "\n"
    "inspect  prints a token file's format, token count, token range (min .. max) and the first\n"
    "         tokens (as text for a text file). FILE is an llm.c/nanoGPT .bin shard or a quoted glob\n"
    "         of them, FILE.h5:/dataset (a 1-D integer dataset), or any other file (bytes = tokens).\n"
    "         'synthetic' prints the synthetic language's layout, unigram entropy, ideal loss\n"
    "         (the entropy of its true next-token distribution) and n-gram baselines, in nats.\n"
    "synth    writes the synthetic language's stream (documents of --doc-len tokens) as an llm.c\n"
    "         shard: version 1 (uint16 tokens) when vocab <= 65536, else version 2 (uint32).\n"
    "\n"
    "options:\n"
    "  --sample N     tokens of the sample to print (default 64)\n"
    "  --vocab V      synthetic vocabulary size, >= 32 (default 256)\n"
    "  --seed S       synthetic language seed (default 1)\n"
    "  --doc-len L    synthetic document length in tokens (default 256)\n"
    "  --tokens N     synth: tokens to write; inspect synthetic: tokens for the statistics (2^20)\n"
    "  --split NAME   synth: train or validation stream (default train)\n"
    "  --out FILE     synth: the shard to write (replaced atomically)\n";

struct Options {
  std::vector<std::string> positional;
  int64_t sample = 64, vocab = 256, doc_len = 256, tokens = -1;
  uint64_t seed = 1;
  std::string split = "train", out;
  bool help = false;
};

Options parse(const std::vector<std::string>& args) {
  Options o;
  o.help = !Arguments("data")
                .integer("sample", o.sample, 0)
                .integer("vocab", o.vocab, 1)
                .integer("seed", o.seed)
                .integer("doc-len", o.doc_len, 1)
                .integer("tokens", o.tokens, 1)
                .text("split", o.split)
                .text("out", o.out)
                .parse(args, o.positional);
  return o;
}

// Smallest and largest token of a source, read in chunks.
std::pair<int32_t, int32_t> token_range(const TokenSource& src) {
  std::vector<int32_t> buf(1 << 20);  // (chunk,)
  int32_t lo = INT32_MAX, hi = INT32_MIN;
  for (uint64_t pos = 0; pos < src.size(); pos += buf.size()) {
    const uint64_t n = std::min<uint64_t>(buf.size(), src.size() - pos);
    src.read(pos, n, buf.data());
    const auto [a, b] = std::minmax_element(buf.begin(), buf.begin() + int64_t(n));
    lo = std::min(lo, *a);
    hi = std::max(hi, *b);
  }
  return {lo, hi};
}

void print_sample(const TokenSource& src, int64_t sample, bool as_text) {
  const uint64_t n = std::min<uint64_t>(uint64_t(std::max<int64_t>(sample, 0)), src.size());
  std::vector<int32_t> tok(n);
  src.read(0, n, tok.data());
  std::printf("sample:      first %llu tokens%s\n", static_cast<unsigned long long>(n), as_text ? " as text" : "");
  if (as_text) {
    std::string text;
    for (int32_t t : tok) {
      const char c = char(t);
      if (c == '\n' || (t >= 32 && t < 127)) {
        text += c;
      } else {
        char esc[8];
        std::snprintf(esc, sizeof esc, "\\x%02x", unsigned(t));
        text += esc;
      }
    }
    std::printf("%s\n", text.c_str());
    return;
  }
  for (uint64_t i = 0; i < n; ++i) std::printf("%d%c", tok[i], (i + 1) % 16 == 0 || i + 1 == n ? '\n' : ' ');
}

void print_common(const TokenSource& src, int64_t sample, bool as_text) {
  std::printf("tokens:      %llu\n", static_cast<unsigned long long>(src.size()));
  if (src.size() > 0) {
    const auto [lo, hi] = token_range(src);
    std::printf("token range: %d .. %d (min .. max; a model needs vocab > %d)\n", lo, hi, hi);
  }
  print_sample(src, sample, as_text);
}

bool has_shard_magic(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  int32_t magic = 0;
  return f.read(reinterpret_cast<char*>(&magic), 4) && magic == data::kShardMagic;
}

void inspect_synthetic(const Options& o) {
  data::SyntheticConfig cfg;
  cfg.doc_len = uint64_t(o.doc_len);
  SB_CHECK(o.vocab >= 32 && o.vocab <= (1 << 21), "--vocab ", o.vocab, " is outside [32, 2^21]");
  const int vocab = int(o.vocab);
  const data::SyntheticLanguage train(cfg, vocab, o.seed, data::Split::train);
  const data::SyntheticLanguage val(cfg, vocab, o.seed, data::Split::validation);
  const uint64_t tokens = o.tokens > 0 ? uint64_t(o.tokens) : uint64_t{1} << 20;
  const data::SyntheticLayout& l = train.layout();
  std::printf("source:      %s\n", val.describe().c_str());
  std::printf(
      "layout:      BOS 0, %d bracket pairs, %d subject and %d verb words per number, %d span keys, "
      "%d background tokens [%d, %d)\n",
      l.brackets, l.words, l.words, l.keys, l.background, l.background0, l.vocab);
  const data::SyntheticStats s = data::synthetic_stats(val, tokens);
  std::printf("statistics over %llu validation tokens, nats per token:\n", static_cast<unsigned long long>(s.tokens));
  std::printf("  unigram entropy      %.4f\n", s.unigram_entropy);
  std::printf("  ideal loss           %.4f  (mean entropy of the true next-token distribution)\n", s.ideal_loss);
  std::vector<int32_t> a(4 * s.tokens), b(s.tokens);  // (4N,) training, (N,) validation tokens
  train.read(0, a.size(), a.data());
  val.read(0, b.size(), b.data());
  const data::NgramLosses n = data::ngram_cross_entropy(a.data(), a.size(), b.data(), b.size(), uint64_t(vocab));
  std::printf("  n-gram baselines     unigram %.4f  bigram %.4f  trigram %.4f  (fit on %llu training tokens)\n",
              n.unigram, n.bigram, n.trigram, static_cast<unsigned long long>(a.size()));
  const char* kinds[] = {"bos", "markov", "grammar", "mark", "recall"};
  std::printf("  by segment           share   ideal -ln p\n");
  for (int k = 0; k < data::kSegmentKinds; ++k) {
    std::printf("    %-8s           %5.3f   %.4f\n", kinds[k], s.fraction[k], s.kind_nll[k]);
  }
  print_sample(val, o.sample, false);
}

int inspect(const Options& o) {
  SB_CHECK(o.positional.size() == 2, "data inspect takes one FILE (got ", o.positional.size() - 1,
           "); samebits data --help");
  const std::string& path = o.positional[1];
  if (path == "synthetic") {
    inspect_synthetic(o);
    return kExitOk;
  }
  std::printf("file:        %s\n", path.c_str());
  if (path.find(":/") != std::string::npos) {
    const data::Hdf5Tokens src(path, data::kMaxVocab, io::isolated_hdf5_decoder());
    std::printf("format:      HDF5 1-D integer dataset\n");
    print_common(src, o.sample, false);
    return kExitOk;
  }
  const bool glob = path.find_first_of("*?[") != std::string::npos;
  if (glob || has_shard_magic(path)) {
    const data::ShardFiles src(path, data::kMaxVocab);
    for (const data::ShardInfo& s : src.shards()) {
      std::printf("shard:       %s  version %d (%s tokens), %llu tokens\n", s.path.c_str(), s.version,
                  s.version == 1 ? "uint16" : "uint32", static_cast<unsigned long long>(s.tokens));
    }
    std::printf("format:      llm.c token shard%s\n", src.shards().size() == 1 ? "" : "s, read as one stream");
    print_common(src, o.sample, false);
    return kExitOk;
  }
  const data::TextFile src(path, data::kMaxVocab);
  std::printf("format:      bytes as tokens (no shard magic; text, vocab 256)\n");
  print_common(src, o.sample, true);
  return kExitOk;
}

int synth(const Options& o) {
  SB_CHECK(o.positional.size() == 1, "data synth takes no positional argument, got '", o.positional.back(),
           "'; samebits data --help");
  SB_CHECK(!o.out.empty(), "data synth needs --out FILE.bin");
  SB_CHECK(o.tokens >= 1 && o.tokens <= INT32_MAX, "data synth needs --tokens N with 1 <= N <= ", INT32_MAX,
           " (one shard's header counts at most that)");
  SB_CHECK(o.split == "train" || o.split == "validation", "--split '", o.split, "' must be train or validation");
  SB_CHECK(o.vocab >= 32 && o.vocab <= (1 << 24), "--vocab ", o.vocab, " is outside [32, 2^24]");
  SB_CHECK(o.doc_len >= 2, "--doc-len ", o.doc_len, " must be at least 2");
  data::SyntheticConfig cfg;
  cfg.doc_len = uint64_t(o.doc_len);
  const data::SyntheticLanguage lang(cfg, int(o.vocab), o.seed,
                                     o.split == "train" ? data::Split::train : data::Split::validation);
  const int version = o.vocab <= 65536 ? 1 : 2;
  data::ShardWriter writer(o.out, version);
  std::vector<int32_t> buf(1 << 20);  // (chunk,)
  for (uint64_t pos = 0; pos < uint64_t(o.tokens); pos += buf.size()) {
    const uint64_t n = std::min<uint64_t>(buf.size(), uint64_t(o.tokens) - pos);
    lang.read(pos, n, buf.data());
    writer.append(buf.data(), n);
  }
  writer.finish();
  std::printf("wrote %lld tokens of the %s, doc_len %lld, to %s (shard version %d, %s tokens)\n",
              static_cast<long long>(o.tokens), lang.describe().c_str(), static_cast<long long>(o.doc_len),
              o.out.c_str(), version, version == 1 ? "uint16" : "uint32");
  return kExitOk;
}

int run_data(const std::vector<std::string>& args) {
  const Options o = parse(args);
  if (o.help || (!o.positional.empty() && o.positional[0] == "help")) {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (o.positional.empty()) {
    std::fputs(kUsage, stderr);
    return kExitError;
  }
  if (o.positional[0] == "inspect") return inspect(o);
  if (o.positional[0] == "synth") return synth(o);
  SB_FAIL("unknown data command '", o.positional[0], "'; use inspect or synth (samebits data --help)");
}

const Registrar kData{{"data", "inspect token files; write the synthetic language as a shard", run_data}};

}  // namespace
}  // namespace sb::cli
