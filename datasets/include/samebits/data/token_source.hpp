// TokenSource: a random-access view of a token stream — the synthetic language, llm.c shard files,
// a text file as bytes, or an HDF5 token dataset — and open_source(DataConfig). Reads are pure and
// thread-safe: a window gives the same tokens every time, in every process, on every machine.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sb::data {

enum class Split { train, validation };

// Tokens are int32: no vocabulary is larger (a source opened with it checks nothing but the type).
constexpr uint64_t kMaxVocab = uint64_t{1} << 31;

const char* split_name(Split split);  // "train" or "validation"

// The synthetic language (docs/DATA.md): documents of doc_len tokens, each a BOS token followed by
// segments; at every segment boundary the next segment's type is drawn with these relative weights.
struct SyntheticConfig {
  uint64_t doc_len = 256;     // tokens per document, BOS included; use seq_len = a multiple of it
  double mix_markov = 0.40;   // Zipfian Markov runs (bigram structure)
  double mix_grammar = 0.30;  // sentences with nested brackets and subject-verb agreement
  double mix_mark = 0.15;     // a marked span: MARK_j, random tokens, SPAN_END
  double mix_recall = 0.15;   // RECALL_j, then an exact copy of the last span marked j
  int markov_run = 8;         // mean length of a Markov run (geometric), 1..1000
  int span_min = 4;           // a marked span has span_min..span_max tokens (uniform)
  int span_max = 12;
  int max_depth = 3;  // deepest bracket nesting of a sentence, 0..16
};

// What the [data] section of an experiment configures (docs/CONFIG.md, docs/DATA.md).
struct DataConfig {
  std::string source = "synthetic";  // synthetic | shards | text | hdf5
  std::string path;                  // training data: a glob of .bin shards, a text file, or FILE.h5:/dataset
  std::string val_path;              // validation data, same form (synthetic: the validation stream instead)
  uint64_t seed = 1;                 // the synthetic language and its streams; the epoch permutations
  int vocab = 256;                   // the model's vocabulary: every token read must be < vocab
  SyntheticConfig synthetic;
};

// Where and how an HDF5 token dataset is decoded (hdf5_tokens.hpp): (file, dataset, vocab) -> the
// tokens, each in [0, vocab).
using Hdf5Decoder = std::function<std::vector<int32_t>(const std::string&, const std::string&, uint64_t)>;

class TokenSource {
 public:
  static constexpr uint64_t kInfinite = UINT64_MAX;

  virtual ~TokenSource() = default;
  // Number of tokens, or kInfinite for a generated stream.
  virtual uint64_t size() const = 0;
  // Every token read is in [0, vocab()).
  virtual uint64_t vocab() const = 0;
  // For messages: "shards 'data/train_*.bin' (3 files)".
  virtual std::string describe() const = 0;
  // Tokens [pos, pos + len) into out (len,). Throws sb::Error naming the file and position when the
  // window leaves the source or a token is >= vocab(). Thread-safe.
  virtual void read(uint64_t pos, uint64_t len, int32_t* out) const = 0;
};

// The training or validation source the config names; an HDF5 token file is decoded by
// `decode_hdf5` (hdf5_tokens.hpp; samebits passes io::isolated_hdf5_decoder()). Throws sb::Error for
// a bad config or file.
std::unique_ptr<TokenSource> open_source(const DataConfig& config, Split split, const Hdf5Decoder& decode_hdf5);

}  // namespace sb::data
