// Rows that hand their prologue on (engine/passes/fusion.hpp, hand_on_prologues): a residual
// h = x + attn that is an output and layer_norm(h)'s x is stored by the norm's kernel as it
// computes it, rather than by an elementwise kernel of its own that reads x and attn once more.
#include <algorithm>

#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln {
namespace {

using namespace fusion;

bool contains(const std::vector<int>& list, int id) {
  return std::find(list.begin(), list.end(), id) != list.end();
}

bool group_reads(const FusedGroup& grp, int id) {
  for (const auto* list : grp.reads())
    if (contains(*list, id)) return true;
  return false;
}

// Whether x's memory may be read by another name: a view or an in-place write of it, or a
// gather read at it (their readers are not listed as reading x).
bool aliased(const Graph& g, int x) {
  for (std::size_t id = 0; id < g.nodes().size(); ++id) {
    const Graph::Node& n = g.nodes()[id];
    if (n.op == "input" || (!is_view(g, int(id)) && !roles(g, int(id)).in_place)) continue;
    for (const auto& a : n.args)
      if (const int* p = std::get_if<int>(&a); p && *p == x) return true;
  }
  return false;
}

}  // namespace

void hand_on_prologues(const Graph& g, std::vector<FusedGroup>& groups) {
  for (std::size_t k = 0; k < groups.size(); ++k) {
    FusedGroup& row = groups[k];
    const int x = row.x;
    // x computed by the prologue (not read from memory), by a row op that can store it.
    if (!row.anchor || !row.anchor->fusion.hands_on || x < 0 || !contains(row.steps, x) ||
        contains(row.outputs, x) || contains(row.extras, x) || aliased(g, x))
      continue;
    const auto end = groups.begin() + std::ptrdiff_t(k);
    const auto writer = std::find_if(groups.begin(), end, [&](const FusedGroup& grp) {
      return !grp.anchor && contains(grp.outputs, x);
    });
    if (writer == end ||
        std::any_of(writer + 1, end, [&](const FusedGroup& grp) { return group_reads(grp, x); }))
      continue;
    row.outputs.push_back(x);
    row.hands_on = true;
    row.epilogue_inputs.erase(
        std::remove(row.epilogue_inputs.begin(), row.epilogue_inputs.end(), x),
        row.epilogue_inputs.end());
    writer->outputs.erase(std::find(writer->outputs.begin(), writer->outputs.end(), x));
    if (writer->outputs.empty()) {
      groups.erase(writer);
      --k;  // the row's group moved one place down
    } else {
      collect(g, writer->outputs, {}, *writer);  // what its other outputs still need
    }
  }
}

}  // namespace kiln
