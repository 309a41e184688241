#pragma once
// What the fusion pass (fusion.cpp) learns of a graph's needed nodes before it groups them, and
// the epilogues it finds on them (fusion_epilogues.cpp).

#include <kiln/graph.hpp>
#include <map>
#include <set>
#include <vector>

#include "engine/passes/fusion.hpp"

namespace kiln::fusion {

// What the fusion pass learns of the needed nodes before it groups them.
struct Layers {
  std::set<int> needed;
  std::set<int> materialized;  // values written to memory
  std::map<int, int> depth;    // row ops on the longest path from the inputs
  int max_depth = 0;
  std::map<int, std::vector<int>> epilogue_of;     // row node -> absorbed elementwise outputs
  std::map<int, std::vector<int>> epilogue_views;  // row node -> FusedGroup::epilogue_views
  std::set<int> kept_views;  // views staying memory though only an epilogue reads them
  std::set<int> absorbed;
  int depth_of(int id) const {
    const auto it = depth.find(id);
    return it == depth.end() ? 0 : it->second;
  }
};

/// Elementwise consumers that fuse as a row op's epilogue: materialized values of the same
/// depth and shape that read the row result (the highest such row op of that depth takes them,
/// so any other row result they read is computed first), or that read it through views the row
/// op's family indexes through, while they fit its kernel; into l.epilogue_of, l.epilogue_views
/// and l.absorbed. Views only such an epilogue reads leave l.needed (but for l.kept_views).
void find_epilogues(const Graph& g, Layers& l);

/// Where a kernel of `groups` still reads a view find_epilogues let go (a row op's prologue
/// computing from it, say), that epilogue's views all go to `kept`: true if any did, and the
/// groups must be made again with them kept.
bool keep_read_views(const Layers& l, const std::vector<FusedGroup>& groups, std::set<int>& kept);

}  // namespace kiln::fusion
