// The C API's kernel templates: one object of graph JSON's "templates" (docs/graph-format.md),
// launched or precompiled on tensors and scalars, or declared as an op of a graph.
#include <fmt/format.h>

#include <kiln/template.hpp>
#include <nlohmann/json.hpp>

#include "capi/handles.hpp"
#include "engine/ir/graph_ops.hpp"

using kiln::capi::guard;
using kiln::capi::need;

namespace {

constexpr const char* kTemplateHint = " (create one with kiln_template_from_json)";
constexpr const char* kEngineHint =
    " (create one with kiln_engine_create or kiln_engine_create_offline)";

nlohmann::json json_object(const char* text, const char* what) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(kiln::capi::text(text, what));
  } catch (const nlohmann::json::exception& e) {
    throw kiln::GraphError(fmt::format("{} is not JSON ({})", what, e.what()));
  }
  if (!j.is_object())
    throw kiln::GraphError(fmt::format("{} is {}, not a JSON object", what,
                                       kiln::printable_name(j.dump())));
  return j;
}

std::vector<kiln::Operand> operands(const kiln_operand* args, std::size_t n) {
  if (n > 0 && !args) throw kiln::ArgumentError(fmt::format("args is NULL but n_args is {}", n));
  std::vector<kiln::Operand> out;
  for (std::size_t i = 0; i < n; ++i) {
    if (args[i].is_scalar)
      out.emplace_back(args[i].scalar);
    else
      out.emplace_back(kiln::capi::view_of(args[i].tensor, fmt::format("args[{}]", i)));
  }
  return out;
}

// A JSON object of tunable values ({"B": 128}), or none for NULL.
std::map<std::string, int> tunables_of(const char* json) {
  std::map<std::string, int> out;
  if (!json) return out;
  const nlohmann::json j = json_object(json, "tunables_json");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number_integer())
      throw kiln::ArgumentError(fmt::format("tunables_json: {} is {}, not an integer",
                                            kiln::printable_name(it.key()),
                                            it.value().dump()));
    out[it.key()] = it.value().get<int>();
  }
  return out;
}

}  // namespace

extern "C" {

kiln_status kiln_template_from_json(const char* json, kiln_template** out) {
  return guard("kiln_template_from_json", [&] {
    need(out, "out", " (pass the address of a kiln_template*)") = nullptr;
    const nlohmann::json j = json_object(json, "json");
    const std::string name = j.contains("name") && j.at("name").is_string()
                                 ? j.at("name").get<std::string>()
                                 : std::string();
    *out = new kiln_template{kiln::template_of(j, ".", "template"), name};
  });
}

kiln_status kiln_template_destroy(kiln_template* t) {
  return guard("kiln_template_destroy", [&] { delete t; });
}

kiln_status kiln_template_launch(kiln_engine* engine, const kiln_template* t,
                                 const kiln_operand* args, size_t n_args,
                                 const char* tunables_json) {
  return guard("kiln_template_launch", [&] {
    kiln::Engine& e = need(engine, "engine", kEngineHint).engine;
    const kiln::Template& tt = need(t, "template", kTemplateHint).tmpl;
    kiln::launch(e, tt, operands(args, n_args), tunables_of(tunables_json));
  });
}

kiln_status kiln_template_precompile(kiln_engine* engine, const kiln_template* t,
                                     const kiln_operand* args, size_t n_args,
                                     const char* tunables_json) {
  return guard("kiln_template_precompile", [&] {
    kiln::Engine& e = need(engine, "engine", kEngineHint).engine;
    const kiln::Template& tt = need(t, "template", kTemplateHint).tmpl;
    kiln::precompile(e, tt, operands(args, n_args), tunables_of(tunables_json));
  });
}

kiln_status kiln_graph_define_template(kiln_graph* graph, const char* name,
                                       const kiln_template* t) {
  return guard("kiln_graph_define_template", [&] {
    kiln::Graph& g =
        need(graph, "graph", " (create one with kiln_graph_create or kiln_graph_from_json)").graph;
    const kiln_template& tt = need(t, "template", kTemplateHint);
    g.define_template(name && *name ? std::string(name) : tt.name, tt.tmpl);
  });
}

}  // extern "C"
