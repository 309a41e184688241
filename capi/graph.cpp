// The C API's graphs: from JSON text, or built node by node (inputs, ops with their attributes
// as a JSON object, outputs), and back to JSON.
#include <fmt/format.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "capi/handles.hpp"
#include "engine/ir/graph_ops.hpp"

using kiln::capi::guard;
using kiln::capi::need;
using kiln::capi::text;

namespace {

constexpr const char* kGraphHint = " (create one with kiln_graph_create or kiln_graph_from_json)";
constexpr const char* kNodeHint = " (pass the address of an int32_t for the node id)";

kiln::Value value_of(kiln::Graph& g, std::int32_t id, std::size_t i) {
  if (id < 0 || std::size_t(id) >= g.nodes().size())
    throw kiln::ArgumentError(fmt::format(
        "args[{}]: node {} is not a node of this graph (its ids are 0 to {}; a scalar needs "
        "is_scalar 1)",
        i, id, std::int64_t(g.nodes().size()) - 1));
  return kiln::Value(&g, id);
}

// `json`, an object of op `op`'s attributes, read through its schema.
kiln::Attrs attrs_of(const kiln::Graph& g, const std::string& op, const char* json) {
  const std::string where = fmt::format("attributes of op '{}'", kiln::printable_name(op));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw kiln::GraphError(fmt::format("{}: attrs_json is not JSON ({})", where, e.what()));
  }
  if (!j.is_object())
    throw kiln::GraphError(
        fmt::format("{}: attrs_json is {}, not a JSON object such as {{\"axis\": 0}}", where,
                    kiln::printable_name(j.dump())));
  const kiln::ops::OpDef* def = nullptr;
  try {
    def = &kiln::op_def(g, op);
  } catch (const kiln::Error& e) {
    throw kiln::GraphError(fmt::format("field op: {}", e.what()));
  }
  return kiln::attrs_from_json(j, *def, where);
}

}  // namespace

extern "C" {

kiln_status kiln_graph_create(kiln_graph** out) {
  return guard("kiln_graph_create", [&] {
    need(out, "out", " (pass the address of a kiln_graph*)") = nullptr;
    *out = new kiln_graph{};
  });
}

kiln_status kiln_graph_from_json(const char* json, kiln_graph** out) {
  return guard("kiln_graph_from_json", [&] {
    need(out, "out", " (pass the address of a kiln_graph*)") = nullptr;
    const std::string source = text(json, "json");
    *out = new kiln_graph{kiln::Graph::parse(source, "graph JSON")};
  });
}

kiln_status kiln_graph_destroy(kiln_graph* graph) {
  return guard("kiln_graph_destroy", [&] { delete graph; });
}

kiln_status kiln_graph_input(kiln_graph* graph, const char* name, const int64_t* shape,
                             int32_t rank, int32_t dtype, int32_t* node) {
  return guard("kiln_graph_input", [&] {
    kiln::Graph& g = need(graph, "graph", kGraphHint).graph;
    need(node, "node", kNodeHint) = -1;
    const std::string n = text(name, "name");
    const std::string what = fmt::format("input '{}'", kiln::printable_name(n));
    const kiln::Shape s = kiln::capi::extents(shape, rank, what);
    *node = g.input(n, s, kiln::capi::dtype_of(dtype, what)).id();
  });
}

kiln_status kiln_graph_add(kiln_graph* graph, const char* op, const kiln_arg* args, size_t n_args,
                           const char* attrs_json, const char* name, int32_t* node) {
  return guard("kiln_graph_add", [&] {
    kiln::Graph& g = need(graph, "graph", kGraphHint).graph;
    need(node, "node", kNodeHint) = -1;
    const std::string op_name = text(op, "op");
    if (n_args > 0 && !args)
      throw kiln::ArgumentError(fmt::format("args is NULL but n_args is {}", n_args));
    std::vector<kiln::GraphArg> list;
    for (std::size_t i = 0; i < n_args; ++i) {
      if (args[i].is_scalar)
        list.emplace_back(args[i].scalar);
      else
        list.emplace_back(value_of(g, args[i].node, i));
    }
    const kiln::Attrs attrs = attrs_json ? attrs_of(g, op_name, attrs_json) : kiln::Attrs{};
    *node = g.add(op_name, list, attrs, name ? name : "").id();
  });
}

kiln_status kiln_graph_output(kiln_graph* graph, int32_t node, const char* name) {
  return guard("kiln_graph_output", [&] {
    kiln::Graph& g = need(graph, "graph", kGraphHint).graph;
    if (node < 0 || std::size_t(node) >= g.nodes().size())
      throw kiln::ArgumentError(fmt::format(
          "node {} is not a node of this graph (its ids are 0 to {})", node,
          std::int64_t(g.nodes().size()) - 1));
    g.output(kiln::Value(&g, node), name ? name : "");
  });
}

kiln_status kiln_graph_to_json(const kiln_graph* graph, char* buf, size_t cap, size_t* len) {
  return guard("kiln_graph_to_json", [&] {
    const std::string json = need(graph, "graph", kGraphHint).graph.to_json();
    need(len, "len", " (pass the address of a size_t for the length)") = json.size();
    if (!buf) return;
    if (cap <= json.size())
      throw kiln::ArgumentError(fmt::format(
          "buf of {} bytes cannot hold the {} bytes of JSON and its NUL: pass cap >= {}", cap,
          json.size(), json.size() + 1));
    std::memcpy(buf, json.c_str(), json.size() + 1);
  });
}

}  // extern "C"
