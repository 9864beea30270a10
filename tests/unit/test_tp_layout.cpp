// The tensor-parallel layout (core/base/tp_layout.cpp): every element of every tensor is held by
// exactly one rank of a sharded split (and by every rank of a replicated one), tp_full_index,
// tp_take_shard and tp_place_shard agree, and the vocabulary split of wte / lm_head.w cuts the
// last rank's block at V (GPT-2's 50257 rows at 2, 3 and 4 ranks); a pipeline stage's layout holds
// its own tensors only, each of the model's on exactly one stage but the tied wte (first and last,
// padded to whole wire segments).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "samebits/core/model/tp_layout.hpp"
#include "samebits/core/pipe_group.hpp"
#include "samebits/det/block_wire.hpp"
#include "samebits/det/error.hpp"

using namespace sb;

namespace {

GPTConfig model(int vocab, bool tied) {
  GPTConfig c;
  c.n_layer = 2;
  c.n_embd = 24;
  c.n_head = 12;
  c.seq_len = 8;
  c.vocab = vocab;
  c.tied_head = tied;
  return c;
}

}  // namespace

TEST_CASE("tp layout: the shards of every tensor cover it once, and take/place/index agree") {
  for (const int vocab : {64, 61, 50257})
    for (const bool tied : {true, false})
      for (const int size : {1, 2, 3, 4}) {
        CAPTURE(vocab);
        CAPTURE(tied);
        CAPTURE(size);
        const GPTConfig cfg = model(vocab, tied);
        std::vector<TpLayout> ranks;
        for (int r = 0; r < size; ++r) ranks.push_back(gpt_tp_layout(cfg, size, r));
        for (size_t t = 0; t < ranks[0].full.size(); ++t) {
          const ParamView& full = ranks[0].full[t];
          CAPTURE(full.name);
          std::vector<float> values(full.numel), placed(full.numel, -1.0f);
          for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
          std::vector<int> holders(full.numel, 0);
          for (int r = 0; r < size; ++r) {
            const TpSplit& s = ranks[r].splits[t];
            const ParamView& local = ranks[r].local[t];
            CHECK(s.sharded == ranks[0].splits[t].sharded);
            if (!s.sharded) {
              CHECK(local.numel == full.numel);
              for (int& h : holders) ++h;
              continue;
            }
            REQUIRE(local.numel == s.numel(r));
            std::vector<float> shard(local.numel);
            tp_take_shard(s, r, values.data(), shard.data());
            bool indexed = true;
            for (size_t j = 0; j < shard.size(); ++j) {
              const size_t f = tp_full_index(s, r, j);
              indexed = indexed && f < full.numel && shard[j] == values[f];
              if (f < full.numel) ++holders[f];
            }
            CHECK(indexed);
            tp_place_shard(s, r, shard.data(), placed.data());
          }
          bool once = true;
          for (int h : holders) once = once && h == (ranks[0].splits[t].sharded ? 1 : size);
          CHECK(once);
          if (ranks[0].splits[t].sharded) CHECK(placed == values);
        }
      }
}

TEST_CASE("tp layout: wte and lm_head.w split by vocabulary rows, the last block cut at V") {
  const GPTConfig cfg = model(50257, false);
  const std::vector<std::vector<int64_t>> rows = {{25129, 25128}, {16753, 16753, 16751}, {12565, 12565, 12565, 12562}};
  for (int size = 2; size <= 4; ++size) {
    int64_t first = 0;  // rank r's first row: the rows of the ranks before it
    for (int r = 0; r < size; ++r) {
      const TpLayout L = gpt_tp_layout(cfg, size, r);
      for (size_t t = 0; t < L.full.size(); ++t) {
        if (L.full[t].name != "wte" && L.full[t].name != "lm_head.w") continue;
        CHECK(L.splits[t].sharded);
        CHECK(L.local[t].shape == Shape{rows[size - 2][r], 24});
        CHECK(L.splits[t].first(r) == first);
      }
      first += rows[size - 2][r];
    }
    CHECK(first == 50257);
  }
  // wpe, the norms and the row-parallel biases stay replicated.
  const TpLayout L = gpt_tp_layout(cfg, 4, 1);
  for (size_t t = 0; t < L.full.size(); ++t)
    if (L.full[t].name == "wpe" || L.full[t].name == "lnf.w" || L.full[t].name == "h.0.attn.proj.b")
      CHECK_FALSE(L.splits[t].sharded);
}

TEST_CASE("stage layouts: each tensor on one stage (a tied wte also on the last), the shards as without stages") {
  constexpr size_t kSegment = size_t{det::kWireSegment} * det::kWireBlock;
  for (const bool tied : {true, false})
    for (const int size : {1, 2})
      for (const int stages : {2, 4}) {
        CAPTURE(tied);
        CAPTURE(size);
        CAPTURE(stages);
        GPTConfig cfg = model(61, tied);
        cfg.n_layer = 4;
        const TpLayout whole = gpt_tp_layout(cfg, size, size - 1);
        std::vector<int> held(whole.full.size(), 0);
        size_t flats = 0;
        for (int s = 0; s < stages; ++s) {
          const TpLayout L = gpt_tp_layout(cfg, size, size - 1, stages, s);
          flats += L.local_flat;
          size_t end = 0;
          for (size_t i = 0; i < L.local.size(); ++i) {
            const ParamView* f = find_param(whole.full, L.full[i].name);
            REQUIRE(f != nullptr);
            const size_t t = size_t(f - whole.full.data());
            CHECK(stage_holds(cfg, stages, s, f->name));
            CHECK(L.full[i].numel == f->numel);
            CHECK(L.local[i].numel == whole.local[t].numel);  // the same shard as without stages
            CHECK(L.local[i].offset >= end);
            end = L.local[i].offset + L.local[i].numel;
            ++held[t];
            if (f->name == "wte") {
              CHECK(i == 0);
              if (tied) CHECK(L.local[1].offset % kSegment == 0);  // the embedding group's segments
            }
          }
        }
        for (size_t t = 0; t < held.size(); ++t) {
          CAPTURE(whole.full[t].name);
          CHECK(held[t] == (tied && whole.full[t].name == "wte" ? 2 : 1));
        }
        CHECK(flats < whole.local_flat * 2);  // the stages together hold about one model
      }
}

TEST_CASE("tp layout: a vocabulary that leaves a rank no row is refused, naming model.vocab") {
  GPTConfig cfg = model(5, true);
  cfg.n_head = 4;
  CHECK_NOTHROW(validate_tp(cfg, 2));  // rows 3 + 2
  try {
    validate_tp(cfg, 4);  // rows 2, 2, 1, 0
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("model.vocab=5") != std::string::npos);
  }
}
