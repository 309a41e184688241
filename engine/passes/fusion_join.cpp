// Results that join another node's kernel (ops::FusionRoles::joins): attention_lse, the rows'
// log-sum-exp, is one more output of the attention kernel of the same operands and attributes,
// which computes it anyway, rather than a second kernel that computes the whole attention again.
#include <algorithm>
#include <kiln/op_schema.hpp>
#include <optional>

#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln {
namespace {

using namespace fusion;

// Node `id`'s attribute values, those it leaves out at their defaults: {causal: false} and {}
// are one call.
std::vector<std::optional<AttrValue>> attr_values(const Graph& g, int id) {
  const Graph::Node& n = g.node(id);
  std::vector<std::optional<AttrValue>> out;
  for (const AttrSpec& spec : op_def(g, n.op).attrs) {
    const AttrValue* v = n.attrs.find(spec.name);
    out.push_back(v ? std::optional<AttrValue>(*v) : spec.fallback);
  }
  return out;
}

// Whether nodes `a` and `b` take the same operands and attribute values (of the same schema).
bool same_call(const Graph& g, int a, int b) {
  const Graph::Node &x = g.node(a), &y = g.node(b);
  if (x.args != y.args) return false;
  const auto &xs = op_def(g, x.op).attrs, &ys = op_def(g, y.op).attrs;
  if (xs.size() != ys.size()) return false;
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (xs[i].name != ys[i].name) return false;
  return attr_values(g, a) == attr_values(g, b);
}

// The group anchored on a node of op `op` that makes the same call as node `id` and has no
// result of id's op joined yet (a second attention_lse of one call runs alone: the kernel has
// one lse to write); -1 if none.
int host_of(const Graph& g, const std::vector<FusedGroup>& groups, int id, std::string_view op) {
  const std::string& mine = g.node(id).op;
  for (std::size_t k = 0; k < groups.size(); ++k) {
    const FusedGroup& h = groups[k];
    if (!h.anchor || h.anchor_node == id || g.node(h.anchor_node).op != op ||
        !same_call(g, h.anchor_node, id))
      continue;
    const bool taken = std::any_of(h.outputs.begin(), h.outputs.end(),
                                   [&](int o) { return g.node(o).op == mine; });
    if (!taken) return int(k);
  }
  return -1;
}

// Whether the host's kernel may run at the earlier of its place and position `k`: it reads
// nothing a kernel between them may write (the call's operands, read by both, are written
// before either; an epilogue's operands are too where they are graph inputs).
bool may_move(const Graph& g, const std::vector<FusedGroup>& groups, int host, std::size_t k) {
  if (std::size_t(host) < k) return true;
  for (int in : groups[std::size_t(host)].epilogue_inputs)
    if (g.node(in).op != "input") return false;
  return true;
}

}  // namespace

void join_results(const Graph& g, std::vector<FusedGroup>& groups) {
  for (std::size_t k = 0; k < groups.size();) {
    const FusedGroup& grp = groups[k];
    const int id = grp.anchor_node;
    const std::string_view op = grp.anchor ? grp.anchor->fusion.joins : std::string_view();
    const int host = op.empty() ? -1 : host_of(g, groups, id, op);
    if (host < 0 || grp.outputs != std::vector<int>{id} || !may_move(g, groups, host, k)) {
      ++k;
      continue;
    }
    // The host's outputs first, then this one; the joined kernel runs where the earlier of the
    // two did (may_move).
    FusedGroup joined = std::move(groups[std::size_t(host)]);
    joined.outputs.push_back(id);
    const std::size_t first = std::min(k, std::size_t(host)), last = std::max(k, std::size_t(host));
    groups[first] = std::move(joined);
    groups.erase(groups.begin() + std::ptrdiff_t(last));
    k = 0;  // positions moved: look again (each join removes a group, so this ends)
  }
}

}  // namespace kiln
