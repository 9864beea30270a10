// The small grammars of artifact evaluation: durations (verify --budget, claims check --budget)
// and the data manifest's text form and comparison (docs/FORMAT.md "Data provenance").
#include <doctest/doctest.h>

#include "samebits/cli/verify_budget.hpp"
#include "samebits/data/data_manifest.hpp"
#include "samebits/det/error.hpp"

using sb::cli::duration_spec;
using sb::cli::parse_duration;

TEST_CASE("durations: 10m, 90s, 1h30m, a lone number of seconds; the spec reads back") {
  CHECK(parse_duration("10m", "--budget") == 600);
  CHECK(parse_duration("90s", "--budget") == 90);
  CHECK(parse_duration("1h30m", "--budget") == 5400);
  CHECK(parse_duration("2m30s", "--budget") == 150);
  CHECK(parse_duration("45", "--budget") == 45);
  CHECK(parse_duration("1.5m", "--budget") == 90);
  for (const char* bad : {"", "m", "10x", "1.2.3s", "10m5", "-5s", "1e3s"}) {
    CHECK_THROWS_AS_MESSAGE(parse_duration(bad, "--budget"), sb::Error, bad);
  }
  for (double s : {5.0, 12.4, 59.0, 61.0, 600.0, 3725.0}) {
    CHECK(std::abs(parse_duration(duration_spec(s), "x") - s) <= std::max(0.5, s * 0.01));
  }
}

TEST_CASE("data manifest: text round trip, differences named by file and kind") {
  using sb::data::DataFile;
  const std::vector<DataFile> recorded = {{"train", "d/fineweb_train_000001.bin", 1000, 0x1111},
                                          {"train", "d/fineweb_train_000003.bin", 2000, 0x2222},
                                          {"validation", "d/fineweb_val_000000.bin", 500, 0x3333}};
  const std::string text = sb::data::manifest_text(recorded);
  CHECK(text.find("train\t2000\t0000000000002222\td/fineweb_train_000003.bin\n") != std::string::npos);
  CHECK(sb::data::parse_manifest(text, "x") == recorded);
  CHECK(sb::data::manifest_differences(recorded, recorded).empty());

  std::vector<DataFile> here = recorded;
  here[1].digest = 0x9999;
  auto d = sb::data::manifest_differences(recorded, here);
  REQUIRE(d.size() == 1);
  CHECK(d[0].rfind("fineweb_train_000003.bin (train, d/fineweb_train_000003.bin): digest 0000000000002222 recorded, "
                   "0000000000009999 here; sizes equal",
                   0) == 0);
  here[1].bytes = 2002;
  d = sb::data::manifest_differences(recorded, here);
  REQUIRE(d.size() == 1);
  CHECK(d[0].find("size 2000 bytes recorded, 2002 here") != std::string::npos);
  here = {recorded[0], recorded[2], {"train", "d/extra.bin", 7, 1}};
  d = sb::data::manifest_differences(recorded, here);
  REQUIRE(d.size() == 2);
  CHECK(d[0].find("fineweb_train_000003.bin") != std::string::npos);
  CHECK(d[0].find("not part of the data here") != std::string::npos);
  CHECK(d[1].find("extra.bin") != std::string::npos);
  CHECK(d[1].find("not recorded") != std::string::npos);

  for (const char* bad : {"train\t1\t00\tx\n", "test\t1\t0000000000000001\tx\n", "train\t-1\t0000000000000001\tx\n",
                          "train\t1\t0000000000000001\n", "train 1 0000000000000001 x\n"}) {
    CHECK_THROWS_AS_MESSAGE(sb::data::parse_manifest(bad, "RUN.h5"), sb::Error, bad);
  }
  CHECK_THROWS_AS(sb::data::manifest_text({{"train", "a\tb", 1, 1}}), sb::Error);
}

TEST_CASE("data manifest of the synthetic language: one record per stream, a function of its parameters") {
  sb::data::DataConfig c;
  const auto a = sb::data::data_manifest(c);
  REQUIRE(a.size() == 2);
  CHECK(a[0].path == "synthetic:train");
  CHECK(a[1].path == "synthetic:validation");
  CHECK(a[0].digest != a[1].digest);
  CHECK(sb::data::data_manifest(c) == a);
  c.seed = 2;
  CHECK(sb::data::data_manifest(c)[0].digest != a[0].digest);
  c.seed = 1;
  c.synthetic.mix_recall = 0.2;
  CHECK(sb::data::data_manifest(c)[0].digest != a[0].digest);
}
