#include "config/option_spec.h"

namespace cs {

OptionSpec make_option(const std::string& section, const std::string& key, OptType type, json default_value,
                       double min, double max, const std::string& help) {
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

const json& resolved_at(const json& section, const std::string& section_name, const std::string& key) {
  if (section.is_object()) {
    auto it = section.find(key);
    if (it != section.end()) return *it;
  }
  throw std::logic_error("resolved config has no '" + (section_name == "$" ? key : section_name + "." + key) +
                         "' (resolve_config fills every option that applies; read a resolved config)");
}

}  // namespace cs
