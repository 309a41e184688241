#pragma once
// Greedy shrinking of a failing graph: drop outputs, bypass nodes, halve extents, for as long
// as the graph still fails.

#include <functional>
#include <kiln/graph.hpp>
#include <string>

namespace kiln::fuzz {

/// The smallest graph (as JSON) reachable from `json` by the steps above for which `fails`
/// holds. Candidates that are no longer valid graphs (or that throw in `fails`) are skipped.
std::string shrink(const std::string& json, const std::function<bool(const Graph&)>& fails);

}  // namespace kiln::fuzz
