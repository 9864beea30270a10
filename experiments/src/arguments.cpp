// arguments.hpp: the options of a command as a Boost.Program_options description (long options
// only, no guessing of abbreviations), each value then read by the configuration's grammar; the
// parsed options are walked in command-line order, so handed-on options keep theirs.
#include "samebits/cli/arguments.hpp"

#include "long_options.hpp"

#include <limits>

#include "samebits/core/config_grammar.hpp"
#include "samebits/core/untrusted_text.hpp"
#include "samebits/det/error.hpp"

namespace sb::cli {

namespace po = boost::program_options;

po::parsed_options parse_long_options(const std::vector<std::string>& args, const po::options_description& desc,
                                      const std::string& what, const std::string& suffix) {
  namespace style = po::command_line_style;
  try {
    return po::command_line_parser(args)
        .options(desc)
        .style(style::unix_style & ~style::allow_guessing & ~style::allow_short)
        .allow_unregistered()
        .run();
  } catch (const po::error& e) {
    SB_FAIL(what, ": ", escape_untrusted(e.what()), suffix);
  }
}

Arguments& Arguments::add(Option option) {
  options_.push_back(std::move(option));
  return *this;
}

void Arguments::fail_value(const std::string& name, const std::string& value, const std::string& expected) const {
  SB_FAIL("samebits ", command_, " --", name, " '", escape_untrusted(value), "': expected ", expected);
}

template <class T>
T Arguments::read(const std::string& name, const std::string& text, T (*parser)(std::string_view)) const {
  try {
    return parser(text);
  } catch (const BadConfigValue& bad) {
    fail_value(name, text, bad.expected);
  }
}

int64_t Arguments::read_integer(const std::string& name, const std::string& text, int64_t min, int64_t max) const {
  const int64_t v = read(name, text, config_value::parse_int);
  if (v < min || v > max)
    fail_value(name, text, "an integer from " + std::to_string(min) + " to " + std::to_string(max));
  return v;
}

Arguments& Arguments::flag(const std::string& name, bool& target, bool value) {
  return add({name, false, false, [&target, value](const std::string&) { target = value; }});
}

Arguments& Arguments::integer(const std::string& name, int64_t& target, int64_t min) {
  return add({name, true, false, [this, name, &target, min](const std::string& text) {
                target = read_integer(name, text, min, std::numeric_limits<int64_t>::max());
              }});
}

Arguments& Arguments::integer(const std::string& name, int& target, int min) {
  return add({name, true, false, [this, name, &target, min](const std::string& text) {
                target = static_cast<int>(read_integer(name, text, min, std::numeric_limits<int>::max()));
              }});
}

Arguments& Arguments::integer(const std::string& name, uint64_t& target) {
  return add({name, true, false,
              [this, name, &target](const std::string& text) { target = read(name, text, config_value::parse_u64); }});
}

Arguments& Arguments::number(const std::string& name, double& target) {
  return add({name, true, false, [this, name, &target](const std::string& text) {
                target = read(name, text, config_value::parse_double);
              }});
}

Arguments& Arguments::text(const std::string& name, std::string& target) {
  return add({name, true, false, [&target](const std::string& text) { target = text; }});
}

Arguments& Arguments::texts(const std::string& name, std::vector<std::string>& target) {
  return add({name, true, true, [&target](const std::string& text) { target.push_back(text); }});
}

Arguments& Arguments::hand_on(std::vector<std::string>& tokens, std::string section) {
  handed_on_ = &tokens;
  handed_section_ = std::move(section);
  return *this;
}

bool Arguments::given(const std::string& name) const { return given_.count(name) != 0; }

bool Arguments::parse(const std::vector<std::string>& args, std::vector<std::string>& positional) {
  const std::string help = " (samebits " + command_ + " --help)";
  po::options_description desc;
  desc.add_options()("help", "");
  for (const Option& o : options_) {
    if (o.takes_value) desc.add_options()(o.name.c_str(), po::value<std::string>());
    else desc.add_options()(o.name.c_str(), "");
  }
  const po::parsed_options parsed = parse_long_options(args, desc, "samebits " + command_, help);
  for (const auto& opt : parsed.options) {
    if (opt.string_key == "help" || (opt.position_key >= 0 && opt.value.front() == "-h")) return false;
  }
  given_.clear();
  const auto& all = parsed.options;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const po::option& opt = all[i];
    if (opt.position_key >= 0) {
      const std::string& a = opt.value.front();
      SB_CHECK(a.size() < 2 || a.front() != '-', "samebits ", command_, ": unknown option '", escape_untrusted(a), "'",
               help);
      positional.push_back(a);
      continue;
    }
    if (opt.unregistered) {
      const std::string& token = opt.original_tokens.front();
      const bool taken =
          handed_on_ != nullptr && (handed_section_.empty() || token.rfind("--" + handed_section_ + ".", 0) == 0);
      SB_CHECK(taken, "samebits ", command_, ": unknown option '", escape_untrusted(token), "'",
               handed_on_ == nullptr || handed_section_.empty()
                   ? help
                   : " (of the configuration's options, only " + handed_section_ +
                         ".* options are taken here; samebits " + command_ + " --help)");
      handed_on_->push_back(token);
      const bool next_is_value = i + 1 < all.size() && all[i + 1].position_key >= 0;
      if (token.find('=') == std::string::npos && next_is_value) handed_on_->push_back(all[++i].value.front());
      continue;
    }
    for (const Option& o : options_) {
      if (o.name != opt.string_key) continue;
      SB_CHECK(given_.insert(o.name).second || o.repeatable, "samebits ", command_, " --", o.name,
               " is given twice; keep one");
      o.set(opt.value.empty() ? std::string() : opt.value.front());
    }
  }
  return true;
}

}  // namespace sb::cli
