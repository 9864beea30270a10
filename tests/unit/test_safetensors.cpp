// safetensors I/O and the GPT weight maps (core/io/safetensors.hpp, gpt_weights.hpp, json_value.hpp):
// values round-trip bit for bit in both namings (import ∘ export is the identity on the flat
// buffer, memcmp); the HF form has GPT2LMHeadModel's names and Conv1D layouts; every damaged or
// hostile file (truncated, bad header length, hostile JSON, wrong dtype, shape, name, offsets,
// non-finite values) is one sb::Error naming the file and the tensor, escaped.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "integration/test_cli_support.hpp"
#include "samebits/core/cpu/cpu_backend.hpp"
#include "samebits/core/io/gpt_weights.hpp"
#include "samebits/core/io/json_value.hpp"
#include "samebits/core/io/safetensors.hpp"
#include "samebits/core/model/gpt.hpp"
#include "samebits/det/error.hpp"
#include "support/error_text.hpp"

namespace {

using namespace sb;
using sbt::TempDir;

GPTConfig gpt2_tiny() {
  GPTConfig c;
  c.vocab = 37, c.seq_len = 8, c.n_layer = 2, c.n_head = 2, c.n_embd = 16;
  return c;
}

// The flat buffer of a seeded model (distinct values everywhere, zero gaps).
std::vector<float> seeded_flat(const GPTConfig& cfg) {
  auto be = make_cpu_backend();
  GPT model(cfg, 1, *be);
  model.init(7);
  std::vector<float> w(model.flat_size());
  be->copy_to_host(w.data(), model.weights().data(), w.size() * sizeof(float));
  return w;
}

// A file: u64 header length, the header text, then `data` bytes.
void write_raw(const std::string& path, const std::string& header, const std::string& data, int64_t length = -1) {
  std::string bytes(8, '\0');
  const uint64_t n = length < 0 ? header.size() : uint64_t(length);
  std::memcpy(bytes.data(), &n, 8);
  sbt::write_text(path, bytes + header + data);
}

using sbt::error_of;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("safetensors: values round-trip bit for bit, header aligned, metadata kept") {
  TempDir dir;
  const std::string path = dir / "t.safetensors";
  std::vector<io::SafeTensor> tensors = {{"a", {2, 3}, {1, -0.0f, 3, std::numeric_limits<float>::denorm_min(), 5, 6}},
                                         {"b.c", {4}, {7, 8, 9, 1e-30f}}};
  io::write_safetensors(path, tensors, {{"format", "pt"}, {"note", "quote \" and \\ and \x01"}});
  const std::vector<char> bytes = sbt::read_bytes(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n % 8 == 0);
  CHECK(bytes.size() == 8 + n + 10 * 4);
  const io::SafetensorsHeader h = io::read_safetensors_header(path);
  REQUIRE(h.tensors.size() == 2);
  CHECK(h.metadata[1].second == "quote \" and \\ and \x01");
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(h.tensors[i].name == tensors[i].name);
    CHECK(h.tensors[i].shape == tensors[i].shape);
    const std::vector<float> v = io::read_safetensor(path, h, h.tensors[i]);
    REQUIRE(v.size() == tensors[i].data.size());
    CHECK(std::memcmp(v.data(), tensors[i].data.data(), v.size() * 4) == 0);
  }
}

TEST_CASE("GPT weights: import of export is the identity in both namings; HF names and Conv1D layout") {
  const GPTConfig cfg = gpt2_tiny();
  const std::vector<float> flat = seeded_flat(cfg);
  TempDir dir;
  for (const auto naming : {io::WeightsNaming::samebits, io::WeightsNaming::hf_gpt2}) {
    const std::string path = dir / (naming == io::WeightsNaming::samebits ? "s.safetensors" : "h.safetensors");
    io::write_safetensors(path, io::gpt_tensors(cfg, flat, naming));
    const std::vector<float> back = io::read_gpt_weights(path, cfg);
    REQUIRE(back.size() == flat.size());
    CHECK(std::memcmp(back.data(), flat.data(), flat.size() * 4) == 0);
  }
  const auto hf = io::gpt_tensors(cfg, flat, io::WeightsNaming::hf_gpt2);
  const auto layout = gpt_param_layout(cfg);
  CHECK(hf.front().name == "transformer.wte.weight");
  CHECK(hf.back().name == "transformer.ln_f.bias");
  for (std::size_t i = 0; i < hf.size(); ++i) {
    if (hf[i].name != "transformer.h.1.attn.c_attn.weight") continue;
    const ParamView& p = layout[i];
    CHECK(p.name == "h.1.attn.qkv.w");
    CHECK(hf[i].shape == std::vector<int64_t>{16, 48});  // [in, out]
    // HF [in=c, out=r] holds samebits (r, c).
    for (int64_t r : {0, 17, 47}) {
      for (int64_t c : {0, 5, 15}) CHECK(hf[i].data[c * 48 + r] == flat[p.offset + r * 16 + c]);
    }
  }
  CHECK(has(io::hf_gpt2_config_json(cfg), "\"n_head\": 2"));
  GPTConfig rms = cfg;
  rms.norm = NormKind::rmsnorm;
  CHECK(
      has(error_of([&] { io::gpt_tensors(rms, seeded_flat(rms), io::WeightsNaming::hf_gpt2); }), "model.norm=rmsnorm"));
}

TEST_CASE("GPT weights: HF files without the transformer. prefix, with mask buffers and a tied lm_head") {
  const GPTConfig cfg = gpt2_tiny();
  const std::vector<float> flat = seeded_flat(cfg);
  TempDir dir;
  auto tensors = io::gpt_tensors(cfg, flat, io::WeightsNaming::hf_gpt2);
  for (auto& t : tensors) t.name = t.name.substr(12);  // "wte.weight", "h.0.attn.c_attn.weight", …
  tensors.push_back({"h.0.attn.bias", {1, 1, 8, 8}, std::vector<float>(64, 1.0f)});
  tensors.push_back({"lm_head.weight", tensors.front().shape, tensors.front().data});
  const std::string path = dir / "old.safetensors";
  io::write_safetensors(path, tensors);
  const std::vector<float> back = io::read_gpt_weights(path, cfg);
  CHECK(std::memcmp(back.data(), flat.data(), flat.size() * 4) == 0);
  tensors.back().data[3] += 1.0f;
  io::write_safetensors(dir / "untied.safetensors", tensors);
  CHECK(has(error_of([&] { io::read_gpt_weights(dir / "untied.safetensors", cfg); }),
            "differs from the token embedding"));
}

TEST_CASE("GPT weights: wrong shape, missing, unknown, F16 and non-finite tensors name the file and the tensor") {
  const GPTConfig cfg = gpt2_tiny();
  const std::vector<float> flat = seeded_flat(cfg);
  TempDir dir;
  const std::string path = dir / "w.safetensors";
  const auto base = io::gpt_tensors(cfg, flat, io::WeightsNaming::samebits);

  GPTConfig wider = cfg;
  wider.vocab = 40;
  io::write_safetensors(path, base);
  std::string e = error_of([&] { io::read_gpt_weights(path, wider); });
  CHECK(has(e, path));
  CHECK(has(e, "tensor 'wte' has shape [37, 16] but this model (model.vocab=40"));

  auto missing = base;
  missing.erase(missing.begin() + 3);
  io::write_safetensors(dir / "m.safetensors", missing);
  CHECK(
      has(error_of([&] { io::read_gpt_weights(dir / "m.safetensors", cfg); }), "has no tensor '" + base[3].name + "'"));

  auto extra = base;
  extra.push_back({"h.9.evil\x1b[31m", {1}, {1.0f}});
  io::write_safetensors(dir / "x.safetensors", extra);
  e = error_of([&] { io::read_gpt_weights(dir / "x.safetensors", cfg); });
  CHECK(has(e, "tensor 'h.9.evil\\x1b[31m' is not a weight of this model"));

  auto nan = base;
  nan[2].data[1] = std::numeric_limits<float>::quiet_NaN();
  io::write_safetensors(dir / "n.safetensors", nan);
  CHECK(has(error_of([&] { io::read_gpt_weights(dir / "n.safetensors", cfg); }), "holds a non-finite value"));

  write_raw(dir / "f16.safetensors", R"({"wte":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", "abcd");
  CHECK(has(error_of([&] { io::read_gpt_weights(dir / "f16.safetensors", cfg); }),
            "tensor 'wte' has dtype F16; samebits reads F32 only"));
}

TEST_CASE("safetensors: damaged and hostile files get one clear error") {
  TempDir dir;
  const std::string p = dir / "bad.safetensors";
  const auto expect = [&](const std::string& part) {
    const std::string e = error_of([&] { io::read_safetensors_header(p); });
    CHECK_MESSAGE(has(e, part), e);
    CHECK_MESSAGE(has(e, p), e);
  };
  sbt::write_text(p, "abc");
  expect("too short");
  write_raw(p, "{}", "", 1000);
  expect("header length 1000 is not in");
  write_raw(p, "[1]", "");
  expect("does not start with '{'");
  write_raw(p, "{\"a\":" + std::string(100, '['), "");
  expect("nested deeper than 16");
  write_raw(p, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{}})", "abcd");
  expect("appears twice");
  write_raw(p, "{\"a\xff\":1}", "");
  expect("invalid UTF-8");
  write_raw(p, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} x)", "abcd");
  expect("bytes after the end");
  write_raw(p, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd");
  expect("tensor 'a': data_offsets span 4 bytes but dtype F32 and shape [2] need 2 x 4");
  write_raw(p, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", "abcd");
  expect("not inside the data buffer");
  write_raw(p, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "abcdefgh");
  expect("cover 4 of the 8 bytes");
  write_raw(
      p,
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
      "abcdefgh");
  expect("tensors overlap or leave a gap");
  write_raw(p, R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}})", "abcd");
  expect("unknown dtype 'Q4'");
  write_raw(p, R"({"a":{"dtype":"F32","shape":[99999999999,99999999999],"data_offsets":[0,4]}})", "abcd");
  expect("shape implies more elements than the file holds");
  write_raw(p, R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd");
  expect("not a non-negative integer");
  write_raw(p, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", "abcd");
  expect("unknown header field 'x'");
  write_raw(p, R"({"__metadata__":{"k":1}})", "");
  expect("__metadata__ 'k' is a number, expected a string");
  // A truncated copy of a good file.
  io::write_safetensors(p, {{"a", {4}, {1, 2, 3, 4}}});
  std::vector<char> bytes = sbt::read_bytes(p);
  bytes.resize(bytes.size() - 3);
  sbt::write_bytes(p, bytes);
  expect("tensor 'a': data_offsets [0, 16] are not inside the data buffer of 13 bytes");
}

TEST_CASE("json: strict values, escapes and surrogates; bounded") {
  const io::JsonValue v = io::parse_json(R"( {"a": [1, -2.5e3, true, null], "s": "x\u00e9\ud83d\ude00\n"} )", "t");
  REQUIRE(v.is(io::JsonValue::Kind::object));
  CHECK(v.find("a")->items()[1].number() == -2500.0);
  uint64_t u = 0;
  CHECK(v.find("a")->items()[0].as_uint(u));
  CHECK(u == 1);
  CHECK(!v.find("a")->items()[1].as_uint(u));
  CHECK(v.find("s")->string() == "x\xc3\xa9\xf0\x9f\x98\x80\n");
  for (const char* bad :
       {"", "{", "[1,]", "01", "1.", "\"\\ud800\"", "\"\\x\"", "\"a\x01\"", "tru", "{\"a\" 1}", "1e999"}) {
    CHECK_THROWS_AS(io::parse_json(bad, "t"), Error);
  }
}
