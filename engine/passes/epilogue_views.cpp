// Views an epilogue looks through (ops::FusionRoles::epilogue_through_views): attention's
// result [B, H, S, D], permuted to [B, S, H, D] and reshaped to [B, S, H·D], plus a residual of
// that shape is still computed where the kernel stores each element. Every view of such a chain
// only reorders dims or merges adjacent ones, so each element of the chain's end is one element
// of its root, and any strides over the end's shape map back to strides over the root's: the
// kernel indexes its epilogue's tensors with those (fusion.hpp: epilogue_view_chain,
// strides_through).
#include <optional>

#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln {

namespace fusion {

// Read off the rule's view of a probe whose strides name the dims.
std::vector<std::size_t> permutation_of(const Graph& g, int id) {
  const Graph::Node& n = g.node(id);
  const ops::ViewRule& rule = view_rule(g, id);
  const Graph::Node& x = g.node(std::get<int>(n.args.at(0)));
  if (!rule.of || view_in_place(g, id) != ops::ViewRule::InPlace::anywhere ||
      x.shape.size() != n.shape.size())
    return {};
  TensorView probe;
  probe.dtype = x.dtype;
  probe.shape = x.shape;
  for (std::size_t d = 0; d < x.shape.size(); ++d) probe.strides.push_back(std::int64_t(d) + 1);
  const std::optional<TensorView> v = rule.of(probe, n.shape, n.attrs);
  if (!v || v->strides.size() != n.shape.size()) return {};
  std::vector<std::size_t> order;
  std::vector<bool> seen(n.shape.size(), false);
  for (std::int64_t s : v->strides) {
    if (s < 1 || s > std::int64_t(seen.size()) || seen[std::size_t(s - 1)]) return {};
    seen[std::size_t(s - 1)] = true;
    order.push_back(std::size_t(s - 1));
  }
  return order;
}

}  // namespace fusion

namespace {

using namespace fusion;

// Strides over x's shape for a reshape's result seen with `strides`, where the reshape merges
// adjacent dims of x (unit dims anywhere): each group of x's dims that makes one result dim
// takes that dim's stride for its last dim, times the extents after it for the others. None
// where a result dim would split one of x's.
std::optional<Shape> unmerge(const Shape& x, const Shape& result, const Shape& strides) {
  Shape out(x.size(), 0);
  std::size_t d = x.size();
  for (std::size_t r = result.size(); r-- > 0;) {
    std::int64_t span = 1;
    while (span < result[r]) {
      if (d == 0) return std::nullopt;
      --d;
      out[d] = strides[r] * span;
      span *= x[d];
    }
    if (span != result[r]) return std::nullopt;
  }
  for (std::size_t i = 0; i < d; ++i)
    if (x[i] != 1) return std::nullopt;
  return out;
}

bool static_shape(const Shape& s) {
  for (std::int64_t e : s)
    if (e < 0) return false;
  return true;
}

}  // namespace

std::optional<Shape> strides_through(const Graph& g, const std::vector<int>& chain, Shape strides) {
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Graph::Node& n = g.node(*it);
    const Shape& x = g.node(std::get<int>(n.args.at(0))).shape;
    if (n.op == "reshape") {
      std::optional<Shape> back = unmerge(x, n.shape, strides);
      if (!back) return std::nullopt;
      strides = std::move(*back);
      continue;
    }
    const std::vector<std::size_t> order = permutation_of(g, *it);
    if (order.empty() || order.size() != strides.size()) return std::nullopt;
    Shape back(x.size(), 0);
    for (std::size_t k = 0; k < order.size(); ++k) back[order[k]] = strides[k];
    strides = std::move(back);
  }
  return strides;
}

std::vector<int> epilogue_view_chain(const Graph& g, int end, int& root) {
  std::vector<int> chain;
  root = -1;
  int id = end;
  for (; is_view(g, id) && !is_gather(g, id); id = std::get<int>(g.node(id).args.at(0))) {
    if (!static_shape(g.node(id).shape)) return {};
    chain.insert(chain.begin(), id);
  }
  if (chain.empty() || !static_shape(g.node(id).shape)) return {};
  // Any strides do: the chain maps back or it does not.
  if (!strides_through(g, chain, Shape(g.node(end).shape.size(), 1))) return {};
  root = id;
  return chain;
}

}  // namespace kiln
