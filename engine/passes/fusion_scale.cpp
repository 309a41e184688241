// Factors that fold into an anchor's scale (ops::FusionRoles::folds_scale): attention(q * c, k,
// v) is attention(q, k, v) with its scale times c, so the elementwise kernel that would write
// q * c goes, and the attention kernel reads q where it is.
#include <algorithm>
#include <cmath>

#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln {

bool fusion::written_in_place(const Graph& g, int id) {
  for (;; id = std::get<int>(g.node(id).args.at(0))) {  // id, then the memory it views
    for (std::size_t n = 0; n < g.nodes().size(); ++n)
      if (roles(g, int(n)).in_place && !g.nodes()[n].args.empty() &&
          g.nodes()[n].args[0] == std::variant<int, double>(id))
        return true;
    if (!is_view(g, id)) return false;
  }
}

namespace {

using namespace fusion;

// Node `id` as x * f: mul(x, c) or mul(c, x) (f = c), div(x, c) (f = 1 / c), x of its dtype and
// shape; false for any other node, and where f is not finite and above 0 (a negative scale
// takes a slower kernel on sm_90a).
bool scaled(const Graph& g, int id, int& x, double& f) {
  const Graph::Node& n = g.node(id);
  if ((n.op != "mul" && n.op != "div") || n.args.size() != 2) return false;
  for (std::size_t i : {0, 1}) {
    const int* xi = std::get_if<int>(&n.args[i]);
    const double* c = std::get_if<double>(&n.args[1 - i]);
    if (!xi || !c || (n.op == "div" && i == 1)) continue;
    x = *xi;
    f = n.op == "mul" ? *c : 1.0 / *c;
    return g.node(x).dtype == n.dtype && g.node(x).shape == n.shape && std::isfinite(f) && f > 0;
  }
  return false;
}

// Whether an attention kernel reads x as it would read the dense result of the factor's kernel
// (its memory order passed on from x): x is an input or a kernel's result, or views of one that
// keep the last axis innermost and broadcast nothing (a permute or transpose leaving the last
// axis where it is, of at most three batch dims, the kernels' most; a reshape; a slice is
// copied). Another view (an expand, the head dim moved) would take a slower path or none.
bool reads_like_dense(const Graph& g, int x) {
  for (int id = x; is_view(g, id); id = std::get<int>(g.node(id).args.at(0))) {
    const Graph::Node& n = g.node(id);
    const auto rank = std::int64_t(n.shape.size());
    if ((n.op == "permute" || n.op == "transpose") && rank > 6) return false;
    const auto last = [rank](std::int64_t d) { return d == rank - 1 || d == -1; };
    if (n.op == "slice") return true;
    if (n.op == "permute") {
      const auto dims = n.attrs.extents("dims");
      if (!dims || dims->empty() || !last(dims->back())) return false;
    } else if (n.op == "transpose") {
      if (last(n.attrs.integer("dim0").value_or(0)) || last(n.attrs.integer("dim1").value_or(1)))
        return false;
    } else if (n.op != "reshape") {
      return false;
    }
  }
  return true;
}

// The group that computes node `id` alone as an elementwise kernel of its own; -1 if none.
int own_group(const std::vector<FusedGroup>& groups, int id) {
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const FusedGroup& grp = groups[k];
    if (!grp.anchor && grp.part < 0 && grp.steps == std::vector<int>{id} &&
        grp.outputs == std::vector<int>{id})
      return int(k);
  }
  return -1;
}

}  // namespace

double folded_scale(const Graph& g, const FusedGroup& grp) {
  double product = 1;
  if (!grp.anchor || !grp.anchor->fusion.folds_scale) return product;
  const std::vector<int> pro = prologue_steps(g, grp);  // computed, not folded
  for (int id : grp.steps) {
    if (std::find(pro.begin(), pro.end(), id) != pro.end()) continue;
    int x = -1;
    double f = 1;
    if (scaled(g, id, x, f)) product *= f;
  }
  return product;
}

void fold_scales(const Graph& g, const std::set<int>& needed, std::vector<FusedGroup>& groups) {
  for (std::size_t k = 0; k < groups.size(); ++k) {
    if (!groups[k].anchor || !groups[k].anchor->fusion.folds_scale) continue;
    for (std::size_t slot : {0, 1}) {
      FusedGroup& grp = groups[k];
      const int id = slot < grp.inputs.size() ? grp.inputs[slot] : -1;
      int x = -1;
      double f = 0;
      // A gather or remap view stays read by the elementwise kernel (attention's read no views
      // at indices), as does a view the attention kernels read slower than dense memory.
      if (id < 0 || !scaled(g, id, x, f) || is_gather(g, x) || !reads_like_dense(g, x) ||
          written_in_place(g, id) || written_in_place(g, x) ||
          read_outside(g, needed, groups, grp, id) ||
          std::count(grp.inputs.begin(), grp.inputs.end(), id) != 1)  // q and k one node
        continue;
      const int own = own_group(groups, id);
      if (own < 0) continue;
      grp.inputs[slot] = x;
      grp.steps.push_back(id);
      groups.erase(groups.begin() + own);
      if (std::size_t(own) < k) --k;
    }
  }
}

}  // namespace kiln
