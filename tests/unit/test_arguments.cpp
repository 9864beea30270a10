// The commands' argument reader (cli/arguments.hpp): flags, values in both spellings, positional
// arguments, handed-on configuration options in order, and one error naming the command and the
// option for every bad input (the config grammar: no trailing bytes, no '+', bounds).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "samebits/cli/arguments.hpp"
#include "samebits/det/error.hpp"

namespace {

struct Parsed {
  bool json = false, plot = true;
  int64_t steps = 0;
  int jobs = 1;
  uint64_t seed = 1;
  double threshold = 0.01;
  std::string out;
  std::vector<std::string> sets, handed, positional;
  bool read = false;
};

Parsed parse(const std::vector<std::string>& args, bool hand_on = false) {
  Parsed p;
  sb::cli::Arguments a("test");
  a.flag("json", p.json).flag("no-plot", p.plot, false).integer("steps", p.steps, 1).integer("jobs", p.jobs, 1);
  a.integer("seed", p.seed).number("threshold", p.threshold).text("out", p.out).texts("set", p.sets);
  if (hand_on) a.hand_on(p.handed);
  p.read = a.parse(args, p.positional);
  return p;
}

std::string error(const std::vector<std::string>& args, bool hand_on = false) {
  try {
    parse(args, hand_on);
  } catch (const sb::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("arguments: flags, values after a space or '=', repeats, positional arguments in order") {
  const Parsed p = parse({"a.h5", "--json", "--steps", "7", "--jobs=3", "--set", "x=1", "b.h5", "--set=y=2",
                          "--no-plot", "--seed", "18446744073709551615", "--threshold", "-0.5", "--out=-"});
  CHECK(p.read);
  CHECK(p.json);
  CHECK_FALSE(p.plot);
  CHECK(p.steps == 7);
  CHECK(p.jobs == 3);
  CHECK(p.seed == 18446744073709551615u);
  CHECK(p.threshold == -0.5);
  CHECK(p.out == "-");
  CHECK(p.sets == std::vector<std::string>{"x=1", "y=2"});
  CHECK(p.positional == std::vector<std::string>{"a.h5", "b.h5"});
  CHECK_FALSE(parse({"--steps", "x", "--help"}).read);  // --help wins, nothing is read
  CHECK_FALSE(parse({"-h"}).read);
}

TEST_CASE("arguments: other options are handed on as written, a separate value with them") {
  const Parsed p = parse({"c.ini", "--run.threads", "2", "--optim.lr=-0.1", "--train.steps", "-3", "--steps", "4",
                          "--model.bias", "--json"},
                         true);
  CHECK(p.handed ==
        std::vector<std::string>{"--run.threads", "2", "--optim.lr=-0.1", "--train.steps", "-3", "--model.bias"});
  CHECK(p.positional == std::vector<std::string>{"c.ini"});
  CHECK(p.steps == 4);
  CHECK(p.json);
}

TEST_CASE("arguments: handed on from one section only; the others refused naming the section") {
  std::vector<std::string> handed, positional;
  int64_t steps = 0;
  sb::cli::Arguments a("test");
  a.integer("steps", steps, 1).hand_on(handed, "run");
  CHECK(a.parse({"x.h5", "--run.threads", "2", "--run.backend=cpu"}, positional));
  CHECK(handed == std::vector<std::string>{"--run.threads", "2", "--run.backend=cpu"});
  CHECK(positional == std::vector<std::string>{"x.h5"});
  CHECK_FALSE(a.given("steps"));
  sb::cli::Arguments b("test");
  b.integer("steps", steps, 1).hand_on(handed, "run");
  try {
    b.parse({"--train.steps", "3"}, positional);
    FAIL("--train.steps was taken");
  } catch (const sb::Error& e) {
    CHECK(std::string(e.what()) ==
          "samebits test: unknown option '--train.steps' (of the configuration's options, only run.* options are "
          "taken here; samebits test --help)");
  }
  CHECK_THROWS_AS(b.parse({"--runx.threads", "3"}, positional), sb::Error);
}

TEST_CASE("arguments: given() names the options on the command line, whatever their value") {
  std::vector<std::string> positional;
  uint64_t seed = 0;
  int64_t steps = 5;
  sb::cli::Arguments a("test");
  a.integer("seed", seed).integer("steps", steps, 0);
  CHECK(a.parse({"--seed=0"}, positional));
  CHECK(a.given("seed"));
  CHECK_FALSE(a.given("steps"));
  CHECK(a.parse({"--steps", "5"}, positional));  // the default's value, given
  CHECK(a.given("steps"));
  CHECK_FALSE(a.given("seed"));  // each parse starts afresh
}

TEST_CASE("arguments: every bad input is an error naming the command and the option") {
  CHECK(error({"--steps", "x"}) == "samebits test --steps 'x': expected an integer such as 4");
  CHECK(error({"--steps", "5x"}) == "samebits test --steps '5x': expected an integer such as 4");
  CHECK(error({"--steps", "+5"}) == "samebits test --steps '+5': expected an integer such as 4");
  CHECK(error({"--steps", "0"}) == "samebits test --steps '0': expected an integer from 1 to 9223372036854775807");
  CHECK(error({"--jobs=4294967297"}) == "samebits test --jobs '4294967297': expected an integer from 1 to 2147483647");
  CHECK(error({"--seed", "-1"}) == "samebits test --seed '-1': expected an integer from 0 to 18446744073709551615");
  CHECK(error({"--threshold", "1e999"}).find("samebits test --threshold '1e999': expected a finite number") == 0);
  CHECK(error({"--steps"}).find("samebits test: ") == 0);
  CHECK(error({"--steps"}).find("--steps") != std::string::npos);
  CHECK(error({"--json=1"}).find("--json") != std::string::npos);
  CHECK(error({"--steps", "2", "--steps", "3"}) == "samebits test --steps is given twice; keep one");
  CHECK(error({"--stepz", "3"}) == "samebits test: unknown option '--stepz' (samebits test --help)");
  CHECK(error({"--ste", "3"}) == "samebits test: unknown option '--ste' (samebits test --help)");  // no guessing
  CHECK(error({"-x"}) == "samebits test: unknown option '-x' (samebits test --help)");
  CHECK(error({"--out", "a\x1b[31m", "--steps", "\x1b"}).find("'\\x1b'") != std::string::npos);  // escaped
}
