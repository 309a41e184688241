#pragma once
// Graph JSON's top-level "ops": the custom ops a graph declares (docs/graph-format.md).

#include <kiln/graph.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ops/op.hpp"

namespace kiln {

namespace detail {
/// What kiln's own code reads of a Graph beyond its public API.
struct GraphAccess {
  /// Op `name` as `g` knows it: its custom ops, then kiln's catalog (ArgumentError if neither).
  static const ops::OpDef& op_def(const Graph& g, std::string_view name);
  /// `to`, an empty graph, with `from`'s custom ops and templates, already checked and parsed.
  static void copy_declarations(const Graph& from, Graph& to);
};
}  // namespace detail

/// Op `name` as `g` knows it (detail::GraphAccess::op_def).
inline const ops::OpDef& op_def(const Graph& g, std::string_view name) {
  return detail::GraphAccess::op_def(g, name);
}

/// Declares in `g` every custom op of `ops` (graph JSON's "ops" array); GraphError naming
/// `origin`, the op and the field for anything malformed.
void parse_custom_ops(const nlohmann::json& ops, Graph& g, const std::string& origin);

/// `g`'s custom ops as graph JSON's "ops" array ("" when it has none), indented for to_json.
std::string custom_ops_json(const Graph& g);

/// Declares in `g` every template of `templates` (graph JSON's "templates" array), their files
/// read from `dir` (the graph file's folder; relative paths without ".." only); GraphError
/// naming `origin`, the template and the field for anything malformed or unreadable.
void parse_templates(const nlohmann::json& templates, Graph& g, const std::string& dir,
                     const std::string& origin);

/// One object of graph JSON's "templates" array as a Template (its "name" is the op name a graph
/// gives it, not read here), files read from `dir`; GraphError starting with `where` for anything
/// malformed or unreadable.
Template template_of(const nlohmann::json& o, const std::string& dir, const std::string& where);

/// `g`'s templates as graph JSON's "templates" array, sources inline ("" when it has none).
std::string templates_json(const Graph& g);

/// A node's "attrs" object read through `op`'s schema. GraphError starting with `where` (the
/// file and the node) naming the key for one the op does not have (with unknown_attr's hint), a
/// value of another type or outside the attribute's range.
Attrs attrs_from_json(const nlohmann::json& attrs, const ops::OpDef& op, const std::string& where);

/// Every attribute `attrs` sets, as a node's "attrs" object (empty when it sets none).
nlohmann::json attrs_json(const Attrs& attrs);

}  // namespace kiln
