// The fusion pass's windows (engine/passes/fusion.hpp, window_slices): slices of a matrix product's
// columns that its kernel writes.
#include <algorithm>
#include <set>

#include "engine/ir/graph_ops.hpp"
#include "engine/passes/fusion.hpp"

namespace kiln {
namespace {

// The product's node of a group anchored on an op whose kernel writes windows (a matrix
// product) and whose result's last axis is its columns (N; not matmul's with a 1-D b, whose
// last axis is M); -1 for any other group.
int columns_host(const Graph& g, const FusedGroup& grp) {
  if (!grp.anchor || !grp.anchor->fusion.windows) return -1;
  const Graph::Node& n = g.node(grp.anchor_node);
  const bool has_n = n.op == "linear" || g.node(std::get<int>(n.args[1])).shape.size() >= 2;
  return has_n ? grp.anchor_node : -1;
}

}  // namespace

bool is_window(const Graph& g, int id) {
  const Graph::Node& n = g.node(id);
  return n.op != "input" && op_def(g, n.op).view.window != nullptr;
}

void window_slices(const Graph& g, const std::set<int>& needed, std::vector<FusedGroup>& groups) {
  std::set<std::size_t> gone;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const FusedGroup& s = groups[i];
    if (!s.anchor || !s.anchor->view.window) continue;
    const Graph::Node& n = g.node(s.anchor_node);
    const int src = std::get<int>(n.args[0]);
    if (is_window(g, src) || g.node(src).shape.empty() ||
        !s.anchor->view.window(g.node(src).shape, n.attrs))
      continue;
    for (std::size_t h = 0; h < i; ++h) {
      FusedGroup& host = groups[h];
      if (columns_host(g, host) < 0 ||
          std::find(host.outputs.begin(), host.outputs.end(), src) == host.outputs.end())
        continue;
      host.outputs.push_back(s.anchor_node);
      gone.insert(i);
      break;
    }
  }
  for (auto it = gone.rbegin(); it != gone.rend(); ++it)
    groups.erase(groups.begin() + std::ptrdiff_t(*it));
  for (FusedGroup& host : groups) {  // what else a kernel writing windows writes
    if (columns_host(g, host) < 0 || std::none_of(host.outputs.begin(), host.outputs.end(),
                                                  [&g](int id) { return is_window(g, id); }))
      continue;
    std::vector<int> kept;
    for (int id : host.outputs)
      if (is_window(g, id) || read_outside(g, needed, groups, host, id)) kept.push_back(id);
    host.outputs = kept;
  }
}

}  // namespace kiln
