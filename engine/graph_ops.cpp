// Custom ops of a graph: declared, looked up, read from and written to graph JSON.
#include "engine/graph_ops.hpp"

#include <fmt/format.h>

#include "ops/custom.hpp"

namespace kiln {

void Graph::define_op(const CustomOp& op) {
  std::shared_ptr<const ops::OpDef> def = ops::make_custom_op(op);
  for (const auto& d : custom_defs_)
    if (d->name == op.name) throw GraphError(fmt::format("custom op '{}': declared twice", op.name));
  custom_ops_.push_back(op);
  custom_defs_.push_back(std::move(def));
}

void Graph::define_template(const std::string& name, const Template& t) {
  for (const auto& def : custom_defs_)
    if (def->name == name)
      throw GraphError(fmt::format("template op '{}': the name is taken", name));
  auto kept = std::make_shared<const Template>(t);
  custom_defs_.push_back(ops::make_template_op(name, kept));
  templates_.emplace_back(name, std::move(kept));
}

const ops::OpDef& detail::GraphAccess::op_def(const Graph& g, std::string_view name) {
  for (const auto& def : g.custom_defs_)
    if (def->name == name) return *def;
  return ops::find_op(name);
}

void parse_custom_ops(const nlohmann::json& ops, Graph& g, const std::string& origin) {
  if (!ops.is_array()) throw GraphError(fmt::format("{}: field ops must be an array", origin));
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const nlohmann::json& o = ops[i];
    const std::string where = fmt::format("{}: ops[{}]", origin, i);
    if (!o.is_object()) throw GraphError(fmt::format("{}: must be an object", where));
    for (auto it = o.begin(); it != o.end(); ++it)
      if (it.key() != "name" && it.key() != "operands" && it.key() != "expr")
        throw GraphError(
            fmt::format("{}: unknown field '{}' (a custom op has name, operands, expr)", where,
                        printable_name(it.key())));
    CustomOp op;
    const auto text = [&](const char* key) {
      if (!o.contains(key) || !o.at(key).is_string())
        throw GraphError(fmt::format("{}: field {} must be a string", where, key));
      return o.at(key).get<std::string>();
    };
    op.name = text("name");
    op.expr = text("expr");
    if (!o.contains("operands") || !o.at("operands").is_array())
      throw GraphError(fmt::format("{}: field operands must be an array of names", where));
    for (const auto& n : o.at("operands")) {
      if (!n.is_string())
        throw GraphError(fmt::format("{}: field operands must be an array of names", where));
      op.operands.push_back(n.get<std::string>());
    }
    try {
      g.define_op(op);
    } catch (const GraphError& e) {
      throw GraphError(fmt::format("{}: {}", origin, e.what()));
    }
  }
}

std::string custom_ops_json(const Graph& g) {
  std::vector<std::string> ops;
  for (const CustomOp& op : g.custom_ops())
    ops.push_back(fmt::format(R"(    {{"name": {}, "operands": {}, "expr": {}}})",
                              nlohmann::json(op.name).dump(), nlohmann::json(op.operands).dump(),
                              nlohmann::json(op.expr).dump()));
  return ops.empty() ? "" : fmt::format("  \"ops\": [\n{}\n  ],\n", fmt::join(ops, ",\n"));
}

}  // namespace kiln
