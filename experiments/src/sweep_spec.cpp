// Reading a sweep file (sweep.hpp): [sweep], [grid] and [cell NAME] sections, the grid's
// cartesian product, every cell's configuration resolved through the option registry, and each
// cell's comparison group and reference. No arithmetic: the file decides which runs exist.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "samebits/cli/options.hpp"
#include "samebits/cli/sweep.hpp"
#include "samebits/core/config_grammar.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {
namespace {

namespace fs = std::filesystem;

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

bool valid_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

// One "key = value" line of a section, with where it was read.
struct Entry {
  std::string key, value;
  int line = 0;
};

struct Section {
  std::string header;  // "sweep", "grid", "cell NAME"
  int line = 0;
  std::vector<Entry> entries;
};

// INI text → sections. '#' starts a comment; an indented line continues the previous value.
std::vector<Section> read_sections(const std::string& file, const std::string& text) {
  std::vector<Section> sections;
  std::istringstream in(text);
  std::string raw;
  int number = 0;
  while (std::getline(in, raw)) {
    ++number;
    const std::string line = trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    const auto where = [&] { return "sweep file " + file + " line " + std::to_string(number); };
    if (line.front() == '[') {
      SB_CHECK(line.back() == ']', where(), ": section header '", line, "' has no closing ']'");
      sections.push_back({trim(line.substr(1, line.size() - 2)), number, {}});
      continue;
    }
    SB_CHECK(!sections.empty(), where(), ": '", line, "' comes before any section ([sweep], [grid] or [cell NAME])");
    const bool continuation = raw.front() == ' ' || raw.front() == '\t';
    if (continuation && !sections.back().entries.empty() && line.find('=') == std::string::npos) {
      sections.back().entries.back().value += " " + line;
      continue;
    }
    const auto eq = line.find('=');
    SB_CHECK(eq != std::string::npos, where(), ": expected 'key = value' in [", sections.back().header, "], got '",
             line, "'");
    const std::string key = trim(line.substr(0, eq));
    SB_CHECK(!key.empty(), where(), ": a value without a key in [", sections.back().header, "]");
    for (const Entry& e : sections.back().entries) {
      SB_CHECK(e.key != key, where(), ": key '", key, "' is given twice in [", sections.back().header, "] (also line ",
               e.line, ")");
    }
    sections.back().entries.push_back({key, trim(line.substr(eq + 1)), number});
  }
  return sections;
}

int parse_int(const std::string& where, const std::string& key, const std::string& value, int min) {
  int64_t v = -1;
  bool valid = true;
  try {
    v = config_value::parse_int(value);
  } catch (const BadConfigValue&) {
    valid = false;
  }
  SB_CHECK(valid && v >= min && v <= 1000000, where, ": ", key, " = '", value, "' must be an integer >= ", min);
  return static_cast<int>(v);
}

bool parse_switch(const std::string& where, const std::string& key, const std::string& value) {
  if (value == "on" || value == "true" || value == "yes" || value == "1") return true;
  if (value == "off" || value == "false" || value == "no" || value == "0") return false;
  SB_FAIL(where, ": ", key, " = '", value, "' must be on or off");
}

// A cell key: a config key (section.key, checked when the cell is resolved) or an execution key.
void set_cell_key(SweepCell& cell, const std::string& where, const std::string& key, const std::string& value,
                  bool allow_reference) {
  if (key == "ranks") {
    cell.ranks = parse_int(where, key, value, 0);
  } else if (key == "micro_leaves") {
    cell.micro_leaves = parse_int(where, key, value, 0);
  } else if (key == "binary") {
    cell.binary = value;
  } else if (key == "reference" && allow_reference) {
    cell.reference = value;
  } else if (key.rfind("env.", 0) == 0 && key.size() > 4) {
    cell.env.emplace_back(key.substr(4), value);
  } else if (key.find('.') != std::string::npos && key != "run.out") {
    cell.settings.emplace_back(key, value);
  } else {
    SB_FAIL(where, ": unknown key '", key, "'; a cell takes config keys (section.key, e.g. run.threads or ",
            "numerics.gemm; run.out is chosen by the sweep), ranks, micro_leaves, env.NAME, binary",
            allow_reference ? " and reference" : " (reference only in [cell NAME])");
  }
}

std::vector<std::string> split_list(const std::string& value) {
  std::vector<std::string> items;
  std::istringstream in(value);
  for (std::string item; std::getline(in, item, ',');) items.push_back(trim(item));
  return items;
}

std::string name_part(const std::string& key, const std::string& value) {
  std::string part = key.substr(key.rfind('.') + 1) + "-" + value;
  for (char& c : part) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '-';
  }
  return part;
}

// The grid's cells: the cartesian product of its keys' values, the last key varying fastest.
std::vector<SweepCell> expand_grid(const std::string& file, const Section& grid) {
  std::vector<SweepCell> cells{SweepCell{}};
  for (const Entry& e : grid.entries) {
    const std::string where = "sweep file " + file + " line " + std::to_string(e.line) + " [grid]";
    const std::vector<std::string> values = split_list(e.value);
    for (const std::string& v : values)
      SB_CHECK(!v.empty(), where, ": ", e.key, " has an empty value in '", e.value, "'");
    std::vector<SweepCell> next;
    for (const SweepCell& c : cells) {
      for (const std::string& v : values) {
        SweepCell n = c;
        set_cell_key(n, where, e.key, v, false);
        n.name += (n.name.empty() ? "" : "_") + name_part(e.key, v);
        next.push_back(std::move(n));
      }
    }
    cells = std::move(next);
  }
  return grid.entries.empty() ? std::vector<SweepCell>{} : cells;
}

// key → value with later entries replacing earlier ones, keeping the first position.
void merge(KeyValues& into, const std::string& key, const std::string& value) {
  for (auto& [k, v] : into) {
    if (k == key) {
      v = value;
      return;
    }
  }
  into.emplace_back(key, value);
}

std::vector<std::string> tokens(const KeyValues& kv, bool drop_compared) {
  std::vector<std::string> t;
  for (const auto& [k, v] : kv) {
    if (!drop_compared || !is_compared_axis(k)) t.push_back("--" + k + "=" + v);
  }
  return t;
}

Config parse_cell(const SweepSpec& spec, const SweepCell& cell, const std::vector<std::string>& overrides) {
  try {
    return parse_config(spec.base, overrides);
  } catch (const Error& e) {
    SB_FAIL("sweep file ", spec.file, " [cell ", cell.name, "]: ", e.what());
  }
}

// A cell fit to be its group's reference: deterministic numerics, no perturbation, base seeds.
bool is_plain(const SweepCell& cell) {
  if (!is_deterministic(cell.config.numerics)) return false;
  for (const auto& [k, v] : cell.settings) {
    if (k == "perturb.tensor" && v.empty()) continue;
    if (is_compared_axis(k) && k.rfind("numerics.", 0) != 0) return false;
  }
  return true;
}

void resolve(SweepSpec& spec, const KeyValues& sweep_set, const SweepOptions& options) {
  for (SweepCell& cell : spec.cells) {
    KeyValues kv{{"run.progress", "off"}};
    for (const auto& [k, v] : sweep_set) merge(kv, k, v);
    for (const auto& [k, v] : cell.settings) merge(kv, k, v);
    for (const std::string& s : options.set) {
      const auto eq = s.find('=');
      SB_CHECK(eq != std::string::npos && eq > 0, "--set '", s, "' must be KEY=VALUE (e.g. --set train.steps=20)");
      merge(kv, s.substr(0, eq), s.substr(eq + 1));
    }
    cell.run_path = (fs::path(spec.out) / "runs" / (cell.name + ".h5")).string();
    merge(kv, "run.out", cell.run_path);
    cell.config = parse_cell(spec, cell, tokens(kv, false));
    const bool own_snapshots =
        std::any_of(kv.begin(), kv.end(), [](const auto& p) { return p.first == "train.snapshot_steps"; });
    if (spec.snapshot_every > 0 && !own_snapshots) {
      std::string steps;
      for (int64_t s = 0; s <= cell.config.train.steps; s += spec.snapshot_every) {
        steps += (steps.empty() ? "" : ",") + std::to_string(s);
      }
      merge(kv, "train.snapshot_steps", steps);
      cell.config = parse_cell(spec, cell, tokens(kv, false));
    }
    cell.overrides = tokens(kv, false);
    cell.experiment_id = experiment_id(cell.config);
    cell.group = experiment_id(parse_cell(spec, cell, tokens(kv, true)));
  }
}

}  // namespace

bool is_compared_axis(const std::string& key) {
  return key.rfind("numerics.", 0) == 0 || key.rfind("perturb.", 0) == 0 || key == "train.seed" ||
         key == "data.order_seed";
}

std::string SweepCell::describe() const {
  std::string s;
  const auto add = [&](const std::string& part) { s += (s.empty() ? "" : " ") + part; };
  for (const auto& [k, v] : settings) add(k.substr(k.find('.') + 1) + "=" + v);
  if (ranks > 0) add("ranks=" + std::to_string(ranks));
  if (micro_leaves > 0) add("micro_leaves=" + std::to_string(micro_leaves));
  for (const auto& [k, v] : env) add(k + "=" + v);
  if (!binary.empty()) add("binary=" + binary);
  return s.empty() ? "(base)" : s;
}

SweepSpec load_sweep(const std::string& path, const SweepOptions& options) {
  std::ifstream in(path, std::ios::binary);
  SB_CHECK(in.good(), "cannot read sweep file '", path,
           "' (expected an INI file such as experiments/sweeps/quickstart.ini)");
  SweepSpec spec;
  spec.file = path;
  spec.text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const std::vector<Section> sections = read_sections(path, spec.text);

  KeyValues sweep_set;
  std::string reference;
  bool have_sweep = false;
  std::vector<SweepCell> grid_cells, explicit_cells;
  for (const Section& s : sections) {
    const std::string at = "sweep file " + path + " line " + std::to_string(s.line);
    if (s.header == "sweep") {
      SB_CHECK(!have_sweep, at, ": a second [sweep] section");
      have_sweep = true;
      for (const Entry& e : s.entries) {
        const std::string where = "sweep file " + path + " line " + std::to_string(e.line) + " [sweep]";
        if (e.key == "base") {
          spec.base = e.value.empty() ? "" : (fs::path(path).parent_path() / e.value).lexically_normal().string();
          SB_CHECK(spec.base.empty() || fs::exists(spec.base), where, ": base = ", e.value, " is not a file (",
                   spec.base, "; paths in a sweep file are relative to the sweep file)");
        } else if (e.key == "out") {
          spec.out = e.value;
        } else if (e.key == "title") {
          spec.title = e.value;
        } else if (e.key == "question") {
          spec.question = e.value;
        } else if (e.key == "expect") {
          spec.expect = e.value;
        } else if (e.key == "reference") {
          reference = e.value;
        } else if (e.key == "plot") {
          spec.plot = parse_switch(where, e.key, e.value);
        } else if (e.key == "pairwise") {
          spec.pairwise = parse_switch(where, e.key, e.value);
        } else if (e.key == "snapshot_every") {
          spec.snapshot_every = parse_int(where, e.key, e.value, 0);
        } else if (e.key.rfind("set.", 0) == 0 && e.key.find('.', 4) != std::string::npos) {
          merge(sweep_set, e.key.substr(4), e.value);
        } else {
          SB_FAIL(where, ": unknown key '", e.key, "'; [sweep] takes base, out, title, question, expect, reference, ",
                  "plot, pairwise, snapshot_every and set.SECTION.KEY");
        }
      }
    } else if (s.header == "grid") {
      SB_CHECK(grid_cells.empty(), at, ": a second [grid] section");
      grid_cells = expand_grid(path, s);
    } else if (s.header.rfind("cell", 0) == 0 && (s.header.size() == 4 || s.header[4] == ' ')) {
      SweepCell cell;
      cell.name = trim(s.header.substr(4));
      SB_CHECK(valid_name(cell.name), at, ": [", s.header, "] needs a name of letters, digits, '.', '_' or '-' ",
               "(it names the run file), e.g. [cell threads-1]");
      for (const Entry& e : s.entries) {
        set_cell_key(cell, "sweep file " + path + " line " + std::to_string(e.line) + " [cell " + cell.name + "]",
                     e.key, e.value, true);
      }
      explicit_cells.push_back(std::move(cell));
    } else {
      SB_FAIL(at, ": unknown section [", s.header, "]; a sweep file has [sweep], [grid] and [cell NAME] sections");
    }
  }
  SB_CHECK(have_sweep, "sweep file ", path, " has no [sweep] section (it names the base experiment: base = FILE.ini)");
  if (!options.out.empty()) spec.out = options.out;
  if (spec.out.empty()) spec.out = (fs::path("runs") / "sweeps" / fs::path(path).stem()).string();
  if (!options.plot) spec.plot = false;
  if (spec.title.empty()) spec.title = fs::path(path).stem().string();
  spec.cells = std::move(grid_cells);
  for (SweepCell& c : explicit_cells) spec.cells.push_back(std::move(c));
  SB_CHECK(!spec.cells.empty(), "sweep file ", path, " has no cells: add [cell NAME] sections or a [grid]");
  for (std::size_t i = 0; i < spec.cells.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      SB_CHECK(spec.cells[i].name != spec.cells[j].name, "sweep file ", path, ": two cells are named '",
               spec.cells[i].name, "' (cell names name the run files; grid cells are named key-value_key-value)");
    }
  }
  resolve(spec, sweep_set, options);
  const auto exists = [&](const std::string& name) {
    return std::any_of(spec.cells.begin(), spec.cells.end(), [&](const SweepCell& c) { return c.name == name; });
  };
  SB_CHECK(reference.empty() || exists(reference), "sweep file ", path, " [sweep]: reference = ", reference,
           " is not a cell of this sweep");
  for (SweepCell& cell : spec.cells) {
    if (!cell.reference.empty()) {
      SB_CHECK(exists(cell.reference), "sweep file ", path, " [cell ", cell.name, "]: reference = ", cell.reference,
               " is not a cell of this sweep");
      cell.compare_to = cell.reference;
      continue;
    }
    const auto in_group = [&](const SweepCell& c) { return c.group == cell.group; };
    const auto named = std::find_if(spec.cells.begin(), spec.cells.end(),
                                    [&](const SweepCell& c) { return c.name == reference && in_group(c); });
    const auto plain = std::find_if(spec.cells.begin(), spec.cells.end(),
                                    [&](const SweepCell& c) { return in_group(c) && is_plain(c); });
    const auto first = std::find_if(spec.cells.begin(), spec.cells.end(), in_group);
    cell.compare_to = named != spec.cells.end() ? named->name : plain != spec.cells.end() ? plain->name : first->name;
  }
  return spec;
}

}  // namespace sb::cli
