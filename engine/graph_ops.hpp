#pragma once
// Graph JSON's top-level "ops": the custom ops a graph declares (docs/graph-format.md).

#include <kiln/graph.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace kiln {

/// Declares in `g` every custom op of `ops` (graph JSON's "ops" array); GraphError naming
/// `origin`, the op and the field for anything malformed.
void parse_custom_ops(const nlohmann::json& ops, Graph& g, const std::string& origin);

/// `g`'s custom ops as graph JSON's "ops" array ("" when it has none), indented for to_json.
std::string custom_ops_json(const Graph& g);

}  // namespace kiln
