// The fusion pass's gather views (engine/passes/fusion.hpp): which are read in place at their
// indices, and the index tensors of the kernels reading them.
#include <set>

#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln {
namespace fusion {
namespace {

std::vector<int> consumers(const Graph& g, int id) {
  std::vector<int> out;
  for (std::size_t c = 0; c < g.nodes().size(); ++c)
    for (const auto& a : g.nodes()[c].args)
      if (std::get_if<int>(&a) && std::get<int>(a) == id) {
        out.push_back(int(c));
        break;
      }
  return out;
}

}  // namespace

// Whether every kernel that may read gather view `id` in place can gather: the elementwise
// chains reading it, and the anchors next to those chains (taking one as a prologue, or hosting
// one as an epilogue) or reading it as their prologue's x or as a concat's part, gather
// (FusionRoles::gathers). A view of it, or a side operand, copies it; so does a last dim known
// only at run time (rows placed at run time do not gather).
bool gathered_in_place(const Graph& g, int id) {
  if (!g.node(id).shape.empty() && g.node(id).shape.back() < 0) return false;
  std::set<int> seen;
  std::vector<int> todo = {id};
  while (!todo.empty()) {
    const int n = todo.back();
    todo.pop_back();
    if (!seen.insert(n).second) continue;
    for (int c : consumers(g, n)) {
      if (is_view(g, c)) return false;
      if (is_kernel_anchor(g, c)) {
        const std::vector<int> args = tensor_args(g, c);
        const ops::FusionRoles& r = roles(g, c);
        // Read as its x (a concat's every operand is the x of its part's kernel)
        const bool as_x =
            r.parts || (r.prologue && std::find(args.begin() + 1, args.end(), n) == args.end());
        if (!r.gathers || !as_x) return false;
        continue;
      }
      todo.push_back(c);
    }
    if (n == id) continue;
    for (int a : tensor_args(g, n)) {
      if (is_kernel_anchor(g, a) && roles(g, a).epilogue && !roles(g, a).gathers) return false;
      if (!is_anchor(g, a) && g.node(a).op != "input") todo.push_back(a);
    }
  }
  return true;
}

}  // namespace fusion

void add_gather_indices(const Graph& g, std::vector<FusedGroup>& groups) {
  std::set<int> written;
  for (const FusedGroup& grp : groups) written.insert(grp.outputs.begin(), grp.outputs.end());
  for (FusedGroup& grp : groups)
    for (const auto* list : {&grp.inputs, &grp.extras, &grp.epilogue_inputs})
      for (int id : *list)
        if (fusion::is_gather(g, id) && !written.count(id) &&
            std::find(grp.gather_views.begin(), grp.gather_views.end(), id) ==
                grp.gather_views.end()) {
          grp.gather_views.push_back(id);
          grp.index_inputs.push_back(fusion::index_node(g, id));
        }
}

}  // namespace kiln
