#include "export/torch_schema.h"

#include "cells/mcrnn.h"
#include "cells/registry.h"
#include "config/schema.h"
#include "tasks/task.h"

namespace cs {

std::string torch_export_format() { return "cellscope-torch-export " + std::to_string(kTorchExportFormat); }

namespace {

const char* export_option_type(OptType t) {
  switch (t) {
    case OptType::Int:
      return "int";
    case OptType::Float:
      return "float";
    case OptType::Bool:
      return "bool";
    case OptType::String:
      return "string";
    case OptType::Enum:
      return "enum";
  }
  return "?";
}

}  // namespace

json torch_export_schema(const json& cfg) {
  const std::string task = resolved<std::string>(resolved_section(cfg, "task"), "task", "name");
  const json& model = resolved_section(cfg, "model");
  const std::string cell = resolved<std::string>(model, "model", "cell");
  json options = json::object();
  for (const OptionSpec& o : options_for(cell, task)) {
    if (o.section != "model") continue;
    json e = {{"type", export_option_type(o.type)}, {"default", o.default_value}};
    if (o.type == OptType::Enum) e["choices"] = o.choices;
    options[o.key] = e;
  }
  json cells = json::object();
  for (const CellInfo& c : cell_registry()) cells[c.name] = c.family;
  json tasks = json::array();
  for (const TaskInfo& t : task_registry()) tasks.push_back(t.name);
  json s = {
      {"cell", cell}, {"family", cell_info(cell).family}, {"options", options}, {"cells", cells}, {"tasks", tasks}};
  if (cell == "mcrnn") {
    const json bm = mcrnn_base_model(model);
    const std::string base = bm.at("cell").get<std::string>();
    s["base"] = {{"cell", base}, {"family", cell_info(base).family}, {"model", bm}};
  }
  return s;
}

}  // namespace cs
