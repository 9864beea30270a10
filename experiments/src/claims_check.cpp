// claims.hpp: the claims file read with Boost's INI parser ([claims] and [claim NAME] sections),
// each quantity taken from the run files (RunReader, diff_runs) or a sweep report's table, and
// compared with the stated value: integers and "none"/"yes"/"no" exactly, a decimal at the
// precision it is written with, bits (0x…) bitwise.
#include <boost/program_options.hpp>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "samebits/cli/claims.hpp"
#include "samebits/cli/diff.hpp"
#include "samebits/cli/verify_budget.hpp"
#include "samebits/core/config_grammar.hpp"
#include "samebits/core/io/run_file.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

const std::set<std::string> kQuantities = {"series", "final_val_loss", "first_divergent_step", "identical",
                                           "table_cell"};

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(config_value::trim(w.back() == ',' ? w.substr(0, w.size() - 1) : w));
  return out;
}

// A step as a claim writes it: a non-negative integer (the configuration's grammar).
bool parse_step(const std::string& text, int64_t& v) {
  try {
    v = config_value::parse_int(text);
  } catch (const BadConfigValue&) {
    return false;
  }
  return v >= 0;
}

// A float or double against the stated decimal (at its precision) and bits.
template <class T>
ClaimResult compare_float(T recorded, const Claim& c) {
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  Bits bits;
  std::memcpy(&bits, &recorded, sizeof bits);
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%0*" PRIx64, int(2 * sizeof bits), uint64_t(bits));
  ClaimResult r{c.name, true, "", ""};
  std::string how;
  if (!c.value.empty()) {
    const std::size_t dot = c.value.find('.');
    const bool plain = c.value.find_first_not_of("-0123456789.") == std::string::npos &&
                       std::count(c.value.begin(), c.value.end(), '.') <= 1;
    SB_CHECK(plain && c.value != "-" && c.value != ".", "claim ", c.name, ": value '", escape_untrusted(c.value),
             "' is not a decimal number (e.g. 4.635901; give bits = 0x… for the encoding)");
    const int decimals = dot == std::string::npos ? 0 : int(c.value.size() - dot - 1);
    char text[128];
    std::snprintf(text, sizeof text, "%.*f", decimals, double(recorded));
    r.holds = text == c.value;
    r.recorded = text;
    how = "as stated (" + std::to_string(decimals) + " decimals)";
  }
  if (!c.bits.empty()) {
    std::string stated = c.bits;
    for (char& ch : stated) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    r.holds = r.holds && stated == hex;
    r.recorded += std::string(r.recorded.empty() ? "" : ", ") + "bits " + hex;
    how += std::string(how.empty() ? "" : " and ") + "bitwise";
  }
  r.how = how;
  return r;
}

ClaimResult compare_text(const Claim& c, const std::string& recorded, const std::string& how) {
  return {c.name, recorded == c.value, recorded, how};
}

const run::SeriesColumn& find_column(const Claim& c) {
  for (const run::SeriesColumn& col : run::series_columns()) {
    if (col.path == "series/" + c.series) return col;
  }
  SB_FAIL("claim ", c.name, ": series '", escape_untrusted(c.series), "' is not a column of a run file (e.g. loss, ",
          "val_loss, grad_norm, per_tensor/grad_norm, param_fingerprint; docs/FORMAT.md)");
}

ClaimResult series_claim(const ClaimsFile& f, const Claim& c) {
  const run::RunReader run = run::RunReader::open(f.run_path(c.runs[0]));
  const run::SeriesColumn& col = find_column(c);
  SB_CHECK(c.step >= 1 && c.step <= run.steps_recorded(), "claim ", c.name, ": step ", c.step, " is not recorded in ",
           run.path(), " (", run.steps_recorded(), " steps)");
  const uint64_t width = run::column_values(col, run.shape());
  uint64_t index = 0;
  if (col.width == run::Width::tensors) {
    SB_CHECK(!c.tensor.empty(), "claim ", c.name, ": series ", c.series,
             " has one value per tensor: give tensor = NAME");
    const auto& t = run.tensors();
    const auto it = std::find_if(t.begin(), t.end(), [&](const run::TensorInfo& x) { return x.name == c.tensor; });
    SB_CHECK(it != t.end(), "claim ", c.name, ": ", run.path(), " has no tensor '", escape_untrusted(c.tensor), "'");
    index = uint64_t(it - t.begin());
  } else {
    SB_CHECK(width == 1 && c.tensor.empty(), "claim ", c.name, ": series ", c.series,
             " is not a per-step value or a per-tensor one");
  }
  const std::vector<std::byte> bytes = run.series_bytes(col);
  const std::size_t size = dtype_bytes(col.dtype);
  const std::byte* at = bytes.data() + (uint64_t(c.step - 1) * width + index) * size;
  const auto get = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, at, sizeof v);
    return v;
  };
  switch (col.dtype) {
    case h5::DType::f32: return compare_float(get(float{}), c);
    case h5::DType::f64: return compare_float(get(double{}), c);
    case h5::DType::u64: {
      char hex[32];
      std::snprintf(hex, sizeof hex, "0x%016" PRIx64, get(uint64_t{}));
      return c.value.rfind("0x", 0) == 0 ? compare_text(c, hex, "exactly")
                                         : compare_text(c, std::to_string(get(uint64_t{})), "exactly");
    }
    case h5::DType::i64: return compare_text(c, std::to_string(get(int64_t{})), "exactly");
    case h5::DType::u8: return compare_text(c, std::to_string(int(get(uint8_t{}))), "exactly");
    default: SB_FAIL("claim ", c.name, ": series ", c.series, " has an unsupported type");
  }
}

ClaimResult final_val_claim(const ClaimsFile& f, const Claim& c) {
  const run::RunReader run = run::RunReader::open(f.run_path(c.runs[0]));
  const auto val = run.series<float>("series/val_loss");
  for (std::size_t k = val.size(); k-- > 0;) {
    if (!std::isnan(val[k])) {
      ClaimResult r = compare_float(val[k], c);
      r.recorded += " (step " + std::to_string(k + 1) + ")";
      return r;
    }
  }
  SB_FAIL("claim ", c.name, ": ", run.path(), " records no validation loss (train.eval_every)");
}

ClaimResult diff_claim(const ClaimsFile& f, const Claim& c) {
  const run::RunReader a = run::RunReader::open(f.run_path(c.runs[0]));
  const run::RunReader b = run::RunReader::open(f.run_path(c.runs[1]));
  DiffOptions options;
  options.agreement = false;
  const RunDiff d = diff_runs(a, b, options);
  if (c.quantity == "identical") return compare_text(c, d.identical() ? "yes" : "no", "every recorded bit (diff)");
  return compare_text(c, d.first_divergent_step == 0 ? "none" : std::to_string(d.first_divergent_step),
                      "exactly (diff)");
}

// The cells of a Markdown table row "| a | b |" (bold markers removed).
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string t = config_value::trim(line);
  if (t.size() < 2 || t.front() != '|') return out;
  std::istringstream in(t.substr(1));
  for (std::string cell; std::getline(in, cell, '|');) {
    std::string v = config_value::trim(cell);
    if (v.size() >= 4 && v.rfind("**", 0) == 0 && v.substr(v.size() - 2) == "**") v = v.substr(2, v.size() - 4);
    out.push_back(v);
  }
  return out;
}

ClaimResult table_claim(const ClaimsFile& f, const Claim& c) {
  const std::string path = f.report_path(c.report);
  std::ifstream in(path);
  SB_CHECK(in.good(), "claim ", c.name, ": the report '", path, "' cannot be read");
  std::vector<std::string> header;
  std::size_t col = 0;
  bool found_column = false;
  for (std::string line; std::getline(in, line);) {
    const auto row = cells(line);
    if (row.empty()) {
      header.clear();
      continue;
    }
    if (header.empty()) {
      header = row;
      const auto it = std::find(header.begin(), header.end(), c.column);
      found_column = found_column || it != header.end();
      col = it == header.end() ? header.size() : std::size_t(it - header.begin());
      continue;
    }
    if (col < header.size() && row.size() > col && row[0] == c.row) {
      return compare_text(c, escape_untrusted(row[col]), "as the report's table states");
    }
  }
  SB_FAIL("claim ", c.name, ": ", path, " has no table with column '", escape_untrusted(c.column), "'",
          found_column ? " and row '" + escape_untrusted(c.row) + "'" : std::string());
}

// The sections of a claims file in the order they first appear, each key once: {section, {key, value}}.
std::vector<std::pair<std::string, std::map<std::string, std::string>>> read_sections(const std::string& path) {
  std::ifstream in(path);
  SB_CHECK(in.good(), "cannot read the claims file '", path, "'");
  po::parsed_options parsed(nullptr);
  try {
    parsed = po::parse_config_file(in, po::options_description(), true);
  } catch (const po::error& e) {
    SB_FAIL("claims file ", path, ": ", e.what(), " (sections [claims] and [claim NAME], lines key = value)");
  }
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> sections;
  for (const po::option& o : parsed.options) {
    const std::string key = o.string_key;
    const std::size_t dot = key.rfind('.');
    SB_CHECK(dot != std::string::npos && !o.value.empty(), "claims file ", path, ": '", escape_untrusted(key),
             "' is outside a section ([claims] or [claim NAME])");
    const std::string section = key.substr(0, dot), name = key.substr(dot + 1);
    auto at = std::find_if(sections.begin(), sections.end(), [&](const auto& s) { return s.first == section; });
    if (at == sections.end()) at = sections.insert(at, {section, {}});
    SB_CHECK(at->second.emplace(name, o.value[0]).second, "claims file ", path, ": [", escape_untrusted(section),
             "] gives ", escape_untrusted(name), " twice");
  }
  return sections;
}

// A [claim NAME] section as written: the claim's texts, its runs and its step before they are read.
struct ClaimText {
  Claim claim;
  std::string runs, step;
};

// Each key of a [claim NAME] section and the text it sets ("run" and "runs" are one key).
using ClaimSlot = std::string& (*)(ClaimText&);
const std::pair<const char*, ClaimSlot> kClaimKeys[] = {
    {"statement", [](ClaimText& t) -> std::string& { return t.claim.statement; }},
    {"quantity", [](ClaimText& t) -> std::string& { return t.claim.quantity; }},
    {"run", [](ClaimText& t) -> std::string& { return t.runs; }},
    {"runs", [](ClaimText& t) -> std::string& { return t.runs; }},
    {"series", [](ClaimText& t) -> std::string& { return t.claim.series; }},
    {"tensor", [](ClaimText& t) -> std::string& { return t.claim.tensor; }},
    {"step", [](ClaimText& t) -> std::string& { return t.step; }},
    {"report", [](ClaimText& t) -> std::string& { return t.claim.report; }},
    {"row", [](ClaimText& t) -> std::string& { return t.claim.row; }},
    {"column", [](ClaimText& t) -> std::string& { return t.claim.column; }},
    {"value", [](ClaimText& t) -> std::string& { return t.claim.value; }},
    {"bits", [](ClaimText& t) -> std::string& { return t.claim.bits; }},
};

// Every key of kClaimKeys, comma-separated: what an unknown key's error offers.
std::string claim_keys_text() {
  std::string text;
  for (const auto& [key, slot] : kClaimKeys) text += (text.empty() ? "" : ", ") + std::string(key);
  return text;
}

// One [claim NAME] section read and checked: every key known, the claim complete for its quantity.
Claim read_claim(const std::string& name, const std::map<std::string, std::string>& keys, const std::string& where) {
  ClaimText t;
  t.claim.name = escape_untrusted(name);
  for (const auto& [k, v] : keys) {
    const auto* known =
        std::find_if(std::begin(kClaimKeys), std::end(kClaimKeys), [&](const auto& entry) { return k == entry.first; });
    SB_CHECK(known != std::end(kClaimKeys), where, ": unknown key '", escape_untrusted(k), "' (", claim_keys_text(),
             ")");
    known->second(t) = v;
  }
  Claim& c = t.claim;
  c.runs = words(t.runs);
  SB_CHECK(kQuantities.count(c.quantity), where, ": quantity '", escape_untrusted(c.quantity),
           "' is not one of series, final_val_loss, first_divergent_step, identical, table_cell");
  SB_CHECK(!c.value.empty() || (!c.bits.empty() && (c.quantity == "series" || c.quantity == "final_val_loss")), where,
           ": no value (the value the paper states)");
  const bool two = c.quantity == "first_divergent_step" || c.quantity == "identical";
  const std::size_t wanted = c.quantity == "table_cell" ? 0 : two ? 2 : 1;
  SB_CHECK(c.runs.size() == wanted, where, ": quantity ", c.quantity, " names ", wanted, " run", wanted == 1 ? "" : "s",
           " (runs = A B), not ", c.runs.size());
  if (c.quantity == "series") {
    SB_CHECK(!c.series.empty() && parse_step(t.step, c.step) && c.step >= 1, where,
             ": a series claim needs series = COLUMN and step = N (N >= 1)");
  }
  if (c.quantity == "table_cell") {
    SB_CHECK(!c.report.empty() && !c.row.empty() && !c.column.empty(), where,
             ": a table_cell claim needs report, row and column");
  }
  int64_t n = 0;
  SB_CHECK(c.quantity != "first_divergent_step" || c.value == "none" || parse_step(c.value, n), where,
           ": first_divergent_step is a step or none, not '", escape_untrusted(c.value), "'");
  SB_CHECK(c.quantity != "identical" || c.value == "yes" || c.value == "no", where, ": identical is yes or no, not '",
           escape_untrusted(c.value), "'");
  for (const std::string& r : c.runs) {
    SB_CHECK(!r.empty() && r.find('/') == std::string::npos && r != "." && r != "..", where, ": run '",
             escape_untrusted(r), "' is not a run name (NAME for RUNS/NAME.h5)");
  }
  return c;
}

}  // namespace

std::vector<std::string> ClaimsFile::run_names() const {
  std::vector<std::string> out;
  for (const Claim& c : claims) {
    for (const std::string& r : c.runs) {
      if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
    }
  }
  return out;
}

std::string ClaimsFile::run_path(const std::string& name) const {
  return (fs::path(runs_dir) / (name + ".h5")).string();
}

std::string ClaimsFile::report_path(const std::string& report) const {
  return (fs::path(runs_dir).parent_path() / report).lexically_normal().string();
}

ClaimsFile read_claims(const std::string& path, const std::string& runs_override) {
  ClaimsFile f;
  f.path = path;
  std::string runs = "runs";
  for (const auto& [section, keys] : read_sections(path)) {
    const std::string where = "claims file " + path + ": [" + escape_untrusted(section) + "]";
    if (section == "claims") {
      for (const auto& [k, v] : keys) {
        SB_CHECK(k == "title" || k == "runs" || k == "budget", where, ": unknown key '", escape_untrusted(k),
                 "' (title, runs, budget)");
        (k == "title" ? f.title : k == "runs" ? runs : f.budget) = v;
      }
      continue;
    }
    SB_CHECK(section.rfind("claim ", 0) == 0 && section.size() > 6, where,
             ": unknown section (expected [claims] or [claim NAME])");
    f.claims.push_back(read_claim(config_value::trim(section.substr(6)), keys, where));
  }
  SB_CHECK(!f.claims.empty(), "claims file ", path, " holds no [claim NAME] section");
  f.runs_dir =
      !runs_override.empty() ? runs_override : (fs::path(path).parent_path() / runs).lexically_normal().string();
  if (f.runs_dir.empty()) f.runs_dir = ".";
  return f;
}

ClaimResult check_claim(const ClaimsFile& file, const Claim& claim) {
  if (claim.quantity == "series") return series_claim(file, claim);
  if (claim.quantity == "final_val_loss") return final_val_claim(file, claim);
  if (claim.quantity == "table_cell") return table_claim(file, claim);
  return diff_claim(file, claim);
}

int check_claims_file(const std::string& path, const ClaimsCheckOptions& options, std::ostream& out) {
  const ClaimsFile f = read_claims(path, options.runs);
  const std::string budget_text = !options.budget.empty() ? options.budget : !f.budget.empty() ? f.budget : "10m";
  const double budget = budget_text == "0" ? 0.0 : parse_duration(budget_text, "--budget");
  const std::vector<std::string> runs = f.run_names();
  for (const Claim& c : f.claims) {
    for (const std::string& r : c.runs) {
      SB_CHECK(fs::is_regular_file(f.run_path(r)), "claims file ", path, ": claim ", c.name, " rests on run ", r,
               ", but ", f.run_path(r), " does not exist (runs are looked up in ", f.runs_dir, "; --runs DIR)");
    }
  }
  out << "claims " << path << (f.title.empty() ? "" : ": " + escape_untrusted(f.title)) << "\n  " << f.claims.size()
      << " claims on " << runs.size() << " runs in " << f.runs_dir << "\n";
  std::vector<std::string> failed;
  for (const Claim& c : f.claims) {
    const ClaimResult r = check_claim(f, c);
    const std::string stated =
        c.value + (c.bits.empty() ? "" : std::string(c.value.empty() ? "" : ", ") + "bits " + c.bits);
    out << (r.holds ? "  HOLDS  " : "  FAILS  ") << c.name
        << (c.statement.empty() ? "" : ": " + escape_untrusted(c.statement)) << "\n         stated "
        << escape_untrusted(stated) << ", recorded " << r.recorded << " (" << r.how << ")\n";
    if (!r.holds) failed.push_back(c.name);
  }
  std::vector<std::string> unreproduced;
  if (budget > 0 && !runs.empty()) {
    out << "verifying the " << runs.size() << " runs the claims rest on within " << duration_spec(budget) << " ("
        << duration_spec(budget / double(runs.size())) << " each)\n";
    out.flush();
    for (const std::string& name : runs) {
      BudgetOptions b;
      b.budget = budget / double(runs.size());
      b.seed = options.seed;
      b.overrides = options.overrides;
      const BudgetResult r = verify_within_budget(f.run_path(name), b, out);
      out << budget_verdict_text(r);
      if (!r.reproduced()) unreproduced.push_back(name);
    }
  }
  const auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (failed.empty() && unreproduced.empty()) {
    out << "verdict: all " << f.claims.size() << " claims hold"
        << (budget > 0 ? "; the " + std::to_string(runs.size()) + " runs they rest on reproduce bit for bit here"
                       : " (runs not verified: --budget 0)")
        << "\n";
    return 0;
  }
  out << "verdict: "
      << (failed.empty()
              ? ""
              : std::to_string(failed.size()) + " claim" + (failed.size() == 1 ? "" : "s") + " FAIL: " + list(failed))
      << (failed.empty() || unreproduced.empty() ? "" : "; ")
      << (unreproduced.empty() ? "" : "runs NOT REPRODUCED: " + list(unreproduced)) << "\n";
  return 1;
}

}  // namespace sb::cli
