// The synthetic language's generator: a state machine over the visible document prefix (mode,
// previous token, bracket stack, defined span keys). Each token draws two Philox words: one picks a
// group of tokens by integer weight, one picks the token inside it. Groups at a state never share a
// token, so the state is a function of the prefix and the trace holds the exact conditionals.
#include <bit>

#include "samebits/data/synthetic.hpp"
#include "samebits/det/error.hpp"
#include "samebits/det/math.hpp"
#include "samebits/det/philox.hpp"

namespace sb::data {

class SyntheticGenerator {
 public:
  SyntheticGenerator(const SyntheticLanguage& language, uint64_t doc, int32_t* out, TokenTrace* trace)
      : lang_(language), lay_(language.layout_), stream_(language.doc_stream_ + doc), out_(out), trace_(trace) {}

  void run(uint64_t count) {
    if (count == 0) return;
    out_[0] = lay_.bos;
    if (trace_ != nullptr) trace_[0] = TokenTrace{0.0f, 0.0f, SegmentKind::bos};
    prev_ = lay_.bos;
    det::Philox4 block{};
    for (uint64_t t = 1; t < count; ++t) {
      if (t == 1 || t % 2 == 0) block = det::philox_block(lang_.seed_, stream_, 2 * t);
      const unsigned lane = unsigned((2 * t) % 4);
      step(t, block.v[lane], block.v[lane + 1]);
    }
  }

 private:
  enum class Mode { boundary, markov, pre_verb, after_open, post_verb, span, recall };
  // What a group's token does to the state; also fixes the group's token distribution.
  enum class Act {
    markov,
    sentence,
    mark,
    recall,
    open,
    subject,
    verb,
    object,
    end,
    close,
    span_token,
    span_end,
    copy
  };
  enum class Dist { uniform, keys, zipf, single };
  struct Group {
    uint64_t weight;
    Act act;
  };
  struct Frame {
    int bracket;  // -1 for the sentence's top clause
    int number;   // 0 singular, 1 plural
  };
  static constexpr int kMaxGroups = 4;
  static constexpr int kMaxFrames = 17;

  // A group's tokens: uniform over [base, base+count), the defined keys, Zipf row `base`, or `base`.
  struct Choice {
    Dist dist;
    int32_t base;
    uint32_t count;
  };

  Choice choice(Act act) const {
    switch (act) {
      case Act::markov: return {Dist::zipf, prev_, 0};
      case Act::sentence:
      case Act::subject: return {Dist::uniform, lay_.subject0, uint32_t(2 * lay_.words)};
      case Act::mark: return {Dist::uniform, lay_.mark0, uint32_t(lay_.keys)};
      case Act::recall: return {Dist::keys, lay_.recall0, uint32_t(std::popcount(defined_))};
      case Act::open: return {Dist::uniform, lay_.open0, uint32_t(lay_.brackets)};
      case Act::verb: return {Dist::uniform, lay_.verb0 + frames_[depth_].number * lay_.words, uint32_t(lay_.words)};
      case Act::object: return {Dist::zipf, lay_.vocab, 0};
      case Act::end: return {Dist::single, lay_.end, 1};
      case Act::close: return {Dist::single, lay_.close0 + frames_[depth_].bracket, 1};
      case Act::span_token: return {Dist::uniform, lay_.background0, uint32_t(lay_.background)};
      case Act::span_end: return {Dist::single, lay_.span_end, 1};
      case Act::copy: return {Dist::single, out_[copy_src_ + copy_idx_], 1};
    }
    return {Dist::single, 0, 1};
  }

  static SegmentKind kind_of(Act act) {
    switch (act) {
      case Act::markov: return SegmentKind::markov;
      case Act::mark:
      case Act::span_token:
      case Act::span_end: return SegmentKind::mark;
      case Act::recall:
      case Act::copy: return SegmentKind::recall;
      default: return SegmentKind::grammar;
    }
  }

  // The groups of the current state (weights > 0), in a fixed order.
  int groups(Group* g) const {
    int n = 0;
    auto add = [&](uint64_t w, Act a) {
      if (w > 0) g[n++] = Group{w, a};
    };
    switch (mode_) {
      case Mode::boundary:
      case Mode::markov: {
        const uint32_t* mix = lang_.mix_;
        const uint64_t recall = defined_ != 0 ? mix[3] : 0;
        uint64_t markov = mix[0];
        if (mode_ == Mode::markov) {
          const uint64_t total = uint64_t(mix[0]) + mix[1] + mix[2] + recall;
          markov += uint64_t(lang_.config_.markov_run - 1) * total;
        }
        add(markov, Act::markov);
        add(mix[1], Act::sentence);
        add(mix[2], Act::mark);
        add(recall, Act::recall);
        break;
      }
      case Mode::pre_verb:
        add(depth_ < lang_.config_.max_depth ? 2 : 0, Act::open);
        add(3 * uint64_t(depth_ + 1), Act::verb);
        break;
      case Mode::after_open: add(1, Act::subject); break;
      case Mode::post_verb:
        add(1, Act::object);
        add(1, depth_ == 0 ? Act::end : Act::close);
        break;
      case Mode::span: {
        const int lo = lang_.config_.span_min, hi = lang_.config_.span_max;
        add(span_len_ < hi ? uint64_t(span_len_ < lo ? 1 : hi - span_len_) : 0, Act::span_token);
        add(span_len_ >= lo ? 1 : 0, Act::span_end);
        break;
      }
      case Mode::recall: add(1, Act::copy); break;
    }
    return n;
  }

  // The token of group choice `c` for the 32-bit draw u.
  int32_t pick(const Choice& c, uint32_t u) const {
    switch (c.dist) {
      case Dist::uniform: return c.base + int32_t((uint64_t(u) * c.count) >> 32);
      case Dist::keys: {
        uint32_t nth = uint32_t((uint64_t(u) * c.count) >> 32);
        uint32_t keys = defined_;
        while (nth-- > 0) keys &= keys - 1;
        return c.base + std::countr_zero(keys);
      }
      case Dist::zipf: return lang_.zipf_token(uint32_t(c.base), u);
      case Dist::single: return c.base;
    }
    return c.base;
  }

  // H(token | group) in nats.
  double group_entropy(const Choice& c) const {
    if (c.dist == Dist::zipf) return lang_.zipf_entropy_;
    if (c.dist == Dist::single) return 0.0;
    return det::log(float(c.count));
  }

  // -ln p(token | group) in nats for the token drawn with u.
  double group_nll(const Choice& c, uint32_t u) const {
    if (c.dist == Dist::zipf) return -lang_.zipf_log_prob(u);
    if (c.dist == Dist::single) return 0.0;
    return det::log(float(c.count));
  }

  void step(uint64_t t, uint32_t u_group, uint32_t u_token) {
    Group g[kMaxGroups] = {};
    const int n = groups(g);
    uint64_t total = 0;
    for (int i = 0; i < n; ++i) total += g[i].weight;
    uint64_t x = (uint64_t(u_group) * total) >> 32;
    int chosen = 0;
    while (x >= g[chosen].weight) x -= g[chosen++].weight;
    const Act act = g[chosen].act;
    const Choice c = choice(act);
    const int32_t token = pick(c, u_token);
    out_[t] = token;
    if (trace_ != nullptr) record(t, g, n, total, chosen, c, u_token);
    advance(t, act, token);
  }

  void record(uint64_t t, const Group* g, int n, uint64_t total, int chosen, const Choice& c, uint32_t u_token) const {
    double entropy = 0, nll = 0;
    for (int i = 0; i < n; ++i) {
      const double p = double(g[i].weight) / double(total);
      const double surprise = -det::log(float(p));
      entropy += p * (surprise + group_entropy(choice(g[i].act)));
      if (i == chosen) nll = surprise + group_nll(c, u_token);
    }
    trace_[t] = TokenTrace{float(entropy), float(nll), kind_of(g[chosen].act)};
  }

  void advance(uint64_t t, Act act, int32_t token) {
    prev_ = token;
    switch (act) {
      case Act::markov: mode_ = Mode::markov; break;
      case Act::sentence:
        depth_ = 0;
        frames_[0] = Frame{-1, (token - lay_.subject0) / lay_.words};
        mode_ = Mode::pre_verb;
        break;
      case Act::mark:
        key_ = token - lay_.mark0;
        span_start_ = t + 1;
        span_len_ = 0;
        mode_ = Mode::span;
        break;
      case Act::recall: {
        const int key = token - lay_.recall0;
        copy_src_ = mark_start_[key];
        copy_len_ = mark_len_[key];
        copy_idx_ = 0;
        mode_ = Mode::recall;
        break;
      }
      case Act::open:
        frames_[++depth_] = Frame{token - lay_.open0, 0};
        mode_ = Mode::after_open;
        break;
      case Act::subject:
        frames_[depth_].number = (token - lay_.subject0) / lay_.words;
        mode_ = Mode::pre_verb;
        break;
      case Act::verb:
      case Act::object: mode_ = Mode::post_verb; break;
      case Act::end: mode_ = Mode::boundary; break;
      case Act::close:
        --depth_;
        mode_ = Mode::pre_verb;
        break;
      case Act::span_token: ++span_len_; break;
      case Act::span_end:
        mark_start_[key_] = span_start_;
        mark_len_[key_] = span_len_;
        defined_ |= 1u << key_;
        mode_ = Mode::boundary;
        break;
      case Act::copy:
        if (++copy_idx_ == copy_len_) mode_ = Mode::boundary;
        break;
    }
  }

  const SyntheticLanguage& lang_;
  const SyntheticLayout& lay_;
  const uint64_t stream_;
  int32_t* out_;       // (count,) the document so far
  TokenTrace* trace_;  // (count,) or null
  Mode mode_ = Mode::boundary;
  int32_t prev_ = 0;
  int depth_ = 0;
  Frame frames_[kMaxFrames] = {};
  uint32_t defined_ = 0;  // bit j: key j has a completed span
  uint64_t mark_start_[4] = {};
  uint64_t mark_len_[4] = {};
  int key_ = 0;
  uint64_t span_start_ = 0;
  int span_len_ = 0;
  uint64_t copy_src_ = 0, copy_len_ = 0, copy_idx_ = 0;
};

void SyntheticLanguage::document(uint64_t doc, uint64_t count, int32_t* out, TokenTrace* trace) const {
  SB_CHECK(count <= config_.doc_len, "synthetic document: ", count, " tokens requested, a document has ",
           config_.doc_len);
  SyntheticGenerator(*this, doc, out, trace).run(count);
}

}  // namespace sb::data
