#pragma once
// What the fusion pass's files ask of a node: its op's fusion roles and view rule
// (ops::FusionRoles, ops::ViewRule).

#include <algorithm>
#include <kiln/graph.hpp>
#include <set>
#include <vector>

#include "engine/ir/graph_ops.hpp"
#include "engine/passes/fusion.hpp"
#include "ops/op.hpp"

namespace kiln::fusion {

// Node `id`'s fusion roles (an input's are a chain member's: it is never asked).
inline const ops::FusionRoles& roles(const Graph& g, int id) {
  static const ops::FusionRoles input;
  const auto& n = g.node(id);
  return n.op == "input" ? input : op_def(g, n.op).fusion;
}

// A kernel of its own (its family's).
inline bool is_kernel_anchor(const Graph& g, int id) {
  return roles(g, id).kind == ops::FusionKind::anchor;
}

// A view: its operand's memory read another way, or a copy of it.
inline bool is_view(const Graph& g, int id) { return roles(g, id).kind == ops::FusionKind::view; }

// An anchor whose elementwise consumers of its shape fuse as its epilogue.
inline bool hosts_epilogue(const Graph& g, int id) {
  return is_kernel_anchor(g, id) && roles(g, id).epilogue;
}

// A node read from memory by what uses it: an anchor or a view.
inline bool is_anchor(const Graph& g, int id) { return is_kernel_anchor(g, id) || is_view(g, id); }

// An anchor whose producers of x fuse as its prologue.
inline bool takes_prologue(const Graph& g, int id) {
  return is_kernel_anchor(g, id) && roles(g, id).prologue;
}

inline bool is_output(const Graph& g, int id) {
  return std::find(g.outputs().begin(), g.outputs().end(), id) != g.outputs().end();
}

inline const ops::ViewRule& view_rule(const Graph& g, int id) {
  return op_def(g, g.node(id).op).view;
}

inline std::vector<int> tensor_args(const Graph& g, int id) {
  std::vector<int> out;
  for (const auto& a : g.node(id).args)
    if (std::holds_alternative<int>(a)) out.push_back(std::get<int>(a));
  return out;
}

/// A gather view (gather, index_select, embedding: read at indices) or a remap view (pad,
/// upsample_nearest: read at positions computed from the coordinates), read in place by the
/// kernels that can (fusion_gathers.cpp).
inline bool is_gather(const Graph& g, int id) {
  return is_view(g, id) && (view_rule(g, id).axis || view_rule(g, id).remap);
}

/// How view `id` is read in place: its rule's, or for this node's shapes (a unit reshape) where
/// its operand is memory — not a gather or remap view, which is read at indices or positions.
inline ops::ViewRule::InPlace view_in_place(const Graph& g, int id) {
  const ops::ViewRule& rule = view_rule(g, id);
  if (!rule.in_place_for) return rule.in_place;
  const Graph::Node& n = g.node(id);
  const int src = std::get<int>(n.args.at(0));
  if (is_gather(g, src)) return rule.in_place;
  return rule.in_place_for(g.node(src).shape, n.shape);
}

/// The node a gather view's kernel takes as its index tensor (FusedGroup::index_inputs): its
/// operand 1; a remap view's x, whose pointer its coordinate slot takes and never reads.
inline int index_node(const Graph& g, int id) {
  return std::get<int>(g.node(id).args.at(view_rule(g, id).remap ? 0 : 1));
}

/// Whether `host`'s epilogue with the elementwise nodes `outputs` absorbed stays within what its
/// kernel takes (ops::FusionRoles::epilogue_tensors, epilogue_scalars, epilogue_rank): the
/// outputs and the tensors it reads besides the host's result (or `reads`, the last of the
/// views it reads that result through), the scalars its steps take, the result's rank
/// (fusion_limits.cpp).
bool epilogue_fits(const Graph& g, int host, const std::vector<int>& outputs, int reads = -1);

/// The scalars a body of `steps` takes: their number arguments and attributes' scalars
/// (fusion_limits.cpp).
std::size_t scalars_of(const Graph& g, const std::vector<int>& steps);

/// The permutation (result dim k reads x's dim order[k]) of view `id` where it only reorders
/// its operand's dims (a permute, a transpose, an expand to the same shape); empty otherwise
/// (epilogue_views.cpp).
std::vector<std::size_t> permutation_of(const Graph& g, int id);

/// Whether gather view `id` is read in place by every kernel that reads it.
bool gathered_in_place(const Graph& g, int id);

/// Whether an in-place write (slice_update) takes node `id`'s memory (or the memory `id` views):
/// moving a read of it to another kernel could move the read past the write (fusion_scale.cpp).
bool written_in_place(const Graph& g, int id);

/// Elementwise nodes needed to compute `roots` from memory (inputs, row results, or anything in
/// `stop`), in topological order, into grp.steps; the memory nodes read go to grp.inputs.
void collect(const Graph& g, const std::vector<int>& roots, const std::set<int>& stop,
             FusedGroup& grp);

}  // namespace kiln::fusion
