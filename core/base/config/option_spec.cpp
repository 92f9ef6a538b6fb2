#include "config/option_spec.h"

namespace cs {

OptionSpec make_option(const std::string& section, const std::string& key, OptType type, json default_value, double min,
                       double max, const std::string& help) {
  OptionSpec o;
  o.section = section;
  o.key = key;
  o.type = type;
  o.default_value = std::move(default_value);
  o.min = min;
  o.max = max;
  o.help = help;
  return o;
}

OptionSpec make_choice(const std::string& section, const std::string& key, json default_value,
                       std::vector<std::string> choices, const std::string& help) {
  OptionSpec o = make_option(section, key, OptType::Enum, std::move(default_value), 0, 0, help);
  o.choices = std::move(choices);
  return o;
}

std::string dump_short(const json& v) {
  // replace: a string that is not UTF-8 (a --set value, a config file in Latin-1) is shown with
  // U+FFFD instead of making dump() throw type_error 316 (exit 1; found by tests/fuzz).
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string choice_error(const std::vector<std::string>& choices, const json& got) {
  std::string list;
  for (auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  return "expected one of: " + list + "; got " + dump_short(got);
}

const json& resolved_at(const json& section, const std::string& section_name, const std::string& key) {
  if (section.is_object()) {
    auto it = section.find(key);
    if (it != section.end()) return *it;
  }
  throw std::logic_error("resolved config has no '" + (section_name == "$" ? key : section_name + "." + key) +
                         "' (resolve_config fills every option that applies; read a resolved config)");
}

}  // namespace cs
