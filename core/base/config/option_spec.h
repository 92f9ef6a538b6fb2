// Option specifications and the field tables that generate them.
//
// A leaf header (json only): cells, tasks and data include this, never config/schema.h.
// Each cell family and task keeps its options in a plain struct whose member
// initialisers are the ONLY defaults (in the manner of LibTorch's TORCH_ARG). One
// OptionTable per struct describes each field once (key, member, range, choices, help
// citing the paper's equation, advanced flag, which cells/tasks) and generates both
//  * the OptionSpec entries the validator, `--set`, `params` and the GUI forms use
//    (their default is read from a default-constructed struct), and
//  * the JSON -> struct binding, which reads a RESOLVED config section with at():
//    resolve_config fills every default, so a missing key is a bug and throws.
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "config/json.h"
#include "util/error.h"

namespace cs {

enum class OptType { Int, Float, Bool, String, Enum };

struct OptionSpec {
  std::string section;  // "task" | "dataset" | "model" | "training"
  std::string key;      // key inside the section, e.g. "hidden"
  OptType type = OptType::Int;
  json default_value;   // null: no default (required or optional-unset)
  double min = -1e300;  // numeric range, inclusive
  double max = 1e300;
  std::vector<std::string> choices;  // for Enum
  std::string help;                  // tooltip: what it does, which equation/table
  std::vector<std::string> cells;    // empty: every cell; else only these cells
  std::vector<std::string> tasks;    // empty: every task; else only these tasks
  bool advanced = false;             // GUI hides it under "Advanced"
  // Common model option that applies only to cells listing it in CellInfo::common_options.
  bool opt_in = false;

  std::string path() const { return section + "." + key; }
  // Whether it applies to a cell and task: config/schema.h's option_applies (opt-in
  // options consult the cell registry, a layer above this header).
};

struct ConfigError {
  std::string path;     // JSON path, e.g. "model.zones"
  std::string message;  // what is wrong and what was expected
  std::string str() const { return path + ": " + message; }
};

// Cross-field validators registered by cells and tasks (called by validate_config
// with the merged, resolved config; they append errors).
using ConfigCheck = std::function<void(const json& cfg, std::vector<ConfigError>& errors)>;

// Build an OptionSpec by hand (the field tables below are the usual way).
OptionSpec make_option(const std::string& section, const std::string& key, OptType type, json default_value, double min,
                       double max, const std::string& help);
OptionSpec make_choice(const std::string& section, const std::string& key, json default_value,
                       std::vector<std::string> choices, const std::string& help);

// The message of a value that is not one of `choices` (the validator's and the enum
// binding's): "expected one of: a, b; got "x"".
std::string choice_error(const std::vector<std::string>& choices, const json& got);
// A JSON value shortened for a message (at most 60 characters; invalid UTF-8 replaced).
std::string dump_short(const json& v);

// Enum options. Each enum class that an option binds is declared with its names, once:
//   enum class GcnEdges { Cosine, ReluCosine };
//   constexpr EnumNames<GcnEdges, 2> enum_names(GcnEdges) {
//     return {{{GcnEdges::Cosine, "cosine"}, {GcnEdges::ReluCosine, "relu_cosine"}}};
//   }
// (found by argument-dependent lookup, as LibTorch's enumtype finds its names). The table's
// order is the order the schema, `--set` errors and the GUI's combo boxes list the choices.
template <class E>
struct EnumName {
  E value;
  const char* name;
};
template <class E, std::size_t N>
using EnumNames = std::array<EnumName<E>, N>;

namespace detail {
template <class E, class = void>
struct has_enum_names : std::false_type {};
template <class E>
struct has_enum_names<E, std::void_t<decltype(enum_names(E{}))>> : std::true_type {};
}  // namespace detail
template <class E>
constexpr bool is_named_enum_v = std::is_enum_v<E>&& detail::has_enum_names<E>::value;

// The name of an enum value ("?" for a value outside the table: a cast, never a config).
template <class E, std::enable_if_t<is_named_enum_v<E>, int> = 0>
constexpr const char* enum_name(E e) {
  for (const auto& n : enum_names(e))
    if (n.value == e) return n.name;
  return "?";
}
template <class E, std::enable_if_t<is_named_enum_v<E>, int> = 0>
std::string to_string(E e) {
  return enum_name(e);
}
// The value named `name`, if any.
template <class E, std::enable_if_t<is_named_enum_v<E>, int> = 0>
std::optional<E> enum_from_name(const std::string& name) {
  for (const auto& n : enum_names(E{}))
    if (name == n.name) return n.value;
  return std::nullopt;
}
// Every name, in the table's order (an OptionSpec's choices).
template <class E, std::enable_if_t<is_named_enum_v<E>, int> = 0>
std::vector<std::string> enum_choices() {
  std::vector<std::string> v;
  for (const auto& n : enum_names(E{})) v.push_back(n.name);
  return v;
}
// The value a JSON name stands for; anything else (a config that skipped validation) throws
// UserError "`where`: " + choice_error(...), the validator's message.
template <class E, std::enable_if_t<is_named_enum_v<E>, int> = 0>
E enum_from_json(const json& v, const std::string& where) {
  if (v.is_string())
    if (auto e = enum_from_name<E>(v.template get<std::string>())) return *e;
  throw UserError(where + ": " + choice_error(enum_choices<E>(), v));
}

// A value of a resolved config section. resolve_config fills every option that applies,
// so a missing key is a programming error: throws std::logic_error naming section.key.
const json& resolved_at(const json& section, const std::string& section_name, const std::string& key);
template <class T>
T resolved(const json& section, const std::string& section_name, const std::string& key) {
  return resolved_at(section, section_name, key).get<T>();
}
// A section of a whole resolved config (cfg["model"], checked as resolved_at checks a key).
inline const json& resolved_section(const json& cfg, const std::string& section_name) {
  return resolved_at(cfg, "$", section_name);
}
// Shorthand for a whole resolved config: resolved<int64_t>(cfg, "model", "hidden").
template <class T>
T resolved_cfg(const json& cfg, const std::string& section_name, const std::string& key) {
  return resolved<T>(resolved_section(cfg, section_name), section_name, key);
}

namespace detail {
template <class T>
struct is_optional : std::false_type {
  using type = T;
};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {
  using type = T;  // the value type
};
template <class T>
constexpr OptType opt_type_of() {
  if constexpr (std::is_same_v<T, bool>) return OptType::Bool;
  else if constexpr (std::is_integral_v<T>) return OptType::Int;
  else if constexpr (std::is_floating_point_v<T>) return OptType::Float;
  else return OptType::String;
}
}  // namespace detail

// The field table of an options struct `Opts` (see the top of this file).
template <class Opts>
class OptionTable {
 public:
  // `section`: the fields' section ("model", ...), and read() takes that section of a
  // resolved config. Empty: keys are "section.key" paths and read() takes the whole config
  // (for tasks whose options span several sections).
  explicit OptionTable(std::string section) : section_(std::move(section)) {}
  // A table whose defaults are `defaults` instead of Opts{} (one struct shared by two
  // tasks that differ in a default, e.g. classify/absa's model.fc).
  OptionTable(std::string section, Opts defaults) : section_(std::move(section)), defaults_(std::move(defaults)) {}

  // A field bound to `member`. Numbers take their inclusive range; std::optional members
  // have no default (null: unset). The type follows the member (Int, Float, Bool, String).
  template <class T>
  OptionTable& field(const std::string& key_or_path, T Opts::*member, double min, double max, std::string help) {
    using V = typename detail::is_optional<T>::type;
    const auto sk = split_key(key_or_path);
    const std::string& sec = sk.first;
    const std::string& key = sk.second;
    Field f;
    f.spec = make_option(sec, key, detail::opt_type_of<V>(), default_of(defaults_.*member), min, max, std::move(help));
    const bool whole = section_.empty();
    f.read = [member, key, sec, whole](const json& j, Opts& o) {
      const json& s = whole ? resolved_section(j, sec) : j;
      if constexpr (detail::is_optional<T>::value) {
        // optional: absent or null means unset (resolve_config has no default to fill)
        auto it = s.find(key);
        if (it == s.end() || it->is_null()) o.*member = std::nullopt;
        else o.*member = it->template get<V>();
      } else {
        o.*member = resolved<T>(s, sec, key);
      }
    };
    fields_.push_back(std::move(f));
    return *this;
  }
  // A non-numeric field (Bool or String): no range.
  template <class T>
  OptionTable& field(const std::string& key, T Opts::*member, std::string help) {
    return field(key, member, 0, 0, std::move(help));
  }
  // A string field restricted to `choices` (OptType::Enum), for lists known only at run time
  // (the task and cell names come from the registries).
  OptionTable& choice(const std::string& key, std::string Opts::*member, std::vector<std::string> choices,
                      std::string help) {
    field(key, member, 0, 0, std::move(help));
    fields_.back().spec.type = OptType::Enum;
    fields_.back().spec.choices = std::move(choices);
    return *this;
  }
  // An enum class field (OptType::Enum): the choices are the enum's names in the order of its
  // enum_names table, the default is the name of the member's default, and read() binds each
  // name to its value (a name outside the table throws UserError with the validator's message).
  template <class E, std::enable_if_t<is_named_enum_v<E>, int> = 0>
  OptionTable& choice(const std::string& key_or_path, E Opts::*member, std::string help) {
    const auto sk = split_key(key_or_path);
    const std::string& sec = sk.first;
    const std::string& key = sk.second;
    Field f;
    f.spec = make_choice(sec, key, json(enum_name(defaults_.*member)), enum_choices<E>(), std::move(help));
    const bool whole = section_.empty();
    f.read = [member, key, sec, whole](const json& j, Opts& o) {
      const json& s = whole ? resolved_section(j, sec) : j;
      o.*member = enum_from_json<E>(resolved_at(s, sec, key), sec + "." + key);
    };
    fields_.push_back(std::move(f));
    return *this;
  }
  // Modifiers of the field added last.
  OptionTable& advanced() {
    fields_.back().spec.advanced = true;
    return *this;
  }
  OptionTable& cells(std::vector<std::string> names) {
    fields_.back().spec.cells = std::move(names);
    return *this;
  }
  OptionTable& tasks(std::vector<std::string> names) {
    fields_.back().spec.tasks = std::move(names);
    return *this;
  }
  // Common model option honoured only by cells that opt in (CellInfo::common_options).
  OptionTable& opt_in() {
    fields_.back().spec.opt_in = true;
    return *this;
  }

  // Schema entries of every field, in declaration order.
  std::vector<OptionSpec> specs() const {
    std::vector<OptionSpec> v;
    for (auto& f : fields_) v.push_back(f.spec);
    return v;
  }
  // Schema entries of the fields that apply to `cell` (a field's cells list empty: all),
  // with the cells list cleared: the registry then scopes them to that one cell.
  std::vector<OptionSpec> specs_for_cell(const std::string& cell) const {
    std::vector<OptionSpec> v;
    for (auto& f : fields_)
      if (names_cell(f.spec, cell)) {
        v.push_back(f.spec);
        v.back().cells.clear();
      }
    return v;
  }
  // The JSON -> struct binding: every field that applies to `cell` (empty: every field)
  // is read from the resolved section (or whole config, see the constructor) with at();
  // the others keep their defaults.
  void read(const json& section, Opts& o, const std::string& cell = "") const {
    for (auto& f : fields_)
      if (cell.empty() || names_cell(f.spec, cell)) f.read(section, o);
  }
  Opts read(const json& section, const std::string& cell = "") const {
    Opts o = defaults_;
    read(section, o, cell);
    return o;
  }
  // For helpers that accept a partial section or config (not a resolved one): the keys
  // present are read, the others keep this table's defaults.
  Opts read_partial(const json& j) const {
    Opts o = defaults_;
    for (auto& f : fields_) {
      const bool present = section_.empty() ? j.contains(f.spec.section) && j.at(f.spec.section).contains(f.spec.key)
                                            : j.contains(f.spec.key);
      if (present) f.read(j, o);
    }
    return o;
  }
  const Opts& defaults() const { return defaults_; }

 private:
  struct Field {
    OptionSpec spec;
    std::function<void(const json&, Opts&)> read;
  };
  template <class T>
  static json default_of(const T& v) {
    if constexpr (detail::is_optional<T>::value) return v ? json(*v) : json(nullptr);
    else return json(v);
  }
  // "key" in this table's section, or "section.key" for a table without one.
  std::pair<std::string, std::string> split_key(const std::string& key_or_path) const {
    if (!section_.empty()) return {section_, key_or_path};
    const auto dot = key_or_path.find('.');
    if (dot == std::string::npos) throw std::logic_error("OptionTable: expected section.key, got " + key_or_path);
    return {key_or_path.substr(0, dot), key_or_path.substr(dot + 1)};
  }
  static bool names_cell(const OptionSpec& s, const std::string& cell) {
    return s.cells.empty() || std::find(s.cells.begin(), s.cells.end(), cell) != s.cells.end();
  }
  std::string section_;
  Opts defaults_{};
  std::vector<Field> fields_;
};

}  // namespace cs
