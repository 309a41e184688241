// Each node's view before its kernels are specialized (engine/passes/fusion.hpp, view_values):
// views read in place as their rule makes them of their operand's memory, and the memory order
// of the rest, which an op may ask for (ops::OpDef::memory_order) and elementwise ops pass on.
#include <fmt/format.h>

#include <map>

#include "engine/ir/graph_ops.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln {
namespace {

using namespace fusion;

// View `view` of `src`'s memory, read in place.
void set_view(const Graph& g, int view, int src, std::vector<TensorView>& values) {
  const Graph::Node& n = g.node(view);
  if (roles(g, view).in_place) {  // its operand's memory as it is
    values[std::size_t(view)] = values.at(std::size_t(src));
    return;
  }
  const TensorView& x = values.at(std::size_t(src));
  const ops::ViewRule& rule = view_rule(g, view);
  std::optional<TensorView> v = rule.of ? rule.of(x, n.shape, n.attrs) : std::nullopt;
  if (!v || v->data != x.data)
    throw Error(fmt::format(
        "internal error in the fusion pass: view '{}' ({}) is read in place but is no view of "
        "{} starting where it does (set KILN_DISABLE_FUSION=1 to work around it, and please "
        "report the graph)",
        n.name, n.op, x.describe()));
  values[std::size_t(view)] = *v;
}

// Dense strides of `shape` laid out in `order` (outermost dim first).
Shape strides_in(const Shape& shape, const std::vector<std::size_t>& order) {
  Shape st(shape.size(), 0);
  std::int64_t step = 1;
  for (std::size_t i = order.size(); i-- > 0;) {
    st[order[i]] = step;
    step *= std::max<std::int64_t>(shape[order[i]], 1);
  }
  return st;
}

// A node's memory order (outermost dim first; empty: row-major), and whether it is only a
// channels_last format passed on from an input or view (which a graph output does not take).
struct Order {
  std::vector<std::size_t> dims;
  bool passed_on = false;
};

// Whether node `id` is laid out for a reader that reorders its dims: its op's kernel writes
// through any strides (ops::FusionRoles::laid_out: attention), or it is an elementwise value of
// such a node's shape computed from it (attention's epilogue: a cast or a scale of its result,
// written by the same kernel or an elementwise one, both writing through any strides). Each
// node is looked at once (`seen`): a chain reusing its values would otherwise be walked along
// every path.
bool lays_out(const Graph& g, int id, std::map<int, bool>& seen) {
  if (auto it = seen.find(id); it != seen.end()) return it->second;
  const ops::FusionRoles& r = roles(g, id);
  bool out = r.laid_out;
  if (!out && r.kind == ops::FusionKind::chain && g.node(id).op != "input")
    for (int a : tensor_args(g, id))
      if (g.node(a).shape == g.node(id).shape && lays_out(g, a, seen)) {
        out = true;
        break;
      }
  seen[id] = out;
  return out;
}

bool lays_out(const Graph& g, int id) {
  std::map<int, bool> seen;
  return lays_out(g, id, seen);
}

// The memory order node `id` asks for: its reader's (lays_out), its op's, or
// (elementwise) that of its first operand of the same shape where that one was given an order
// here or is a channels_last input or view. A channels_last format passes on from an input or
// view to values inside the plan, as torch's elementwise ops pass it on (a residual add before a
// group_norm stays channels_last); a graph output stays row-major there, as its caller reads it.
Order order_of(const Graph& g, int id, const std::vector<TensorView>& values,
               const std::map<int, Order>& ordered) {
  const Graph::Node& n = g.node(id);
  const ops::OpDef& op = op_def(g, n.op);
  if (lays_out(g, id))  // its one reader, if that is a view reordering its dims
    for (std::size_t r = std::size_t(id) + 1; r < g.nodes().size(); ++r) {
      const auto& args = g.nodes()[r].args;
      if (args.empty() || args[0] != std::variant<int, double>(id)) continue;
      std::vector<std::size_t> order = reader_order(g, int(r));
      if (!order.empty() || op.fusion.laid_out) return {std::move(order)};
      break;  // an elementwise value: as its operands pass it on
    }
  if (op.memory_order) {
    std::vector<TensorView> operands;
    for (int a : tensor_args(g, id)) operands.push_back(values.at(std::size_t(a)));
    std::vector<std::size_t> order = op.memory_order(operands);
    if (order.size() != n.shape.size()) return {};
    return {order};
  }
  if (op.fusion.kind != ops::FusionKind::chain) return {};
  const bool output = is_output(g, id);
  for (int a : tensor_args(g, id)) {
    if (g.node(a).shape != n.shape) continue;
    auto it = ordered.find(a);
    if (it != ordered.end()) return output && it->second.passed_on ? Order{} : it->second;
    if (output) return {};
    return {ops::keeps_channels_last({values.at(std::size_t(a))}), true};
  }
  return {};
}

// Whether every view read in place of `id`'s memory (and of those views', on) can still be made
// of it as `v` lays it out: a reshape of a channels_last value cannot, so that value stays
// row-major.
bool views_hold(const Graph& g, int id, const TensorView& v,
                const std::multimap<int, int>& readers) {
  const auto [first, last] = readers.equal_range(id);
  for (auto it = first; it != last; ++it) {
    const int view = it->second;
    if (roles(g, view).in_place) {
      if (!views_hold(g, view, v, readers)) return false;
      continue;
    }
    const Graph::Node& n = g.node(view);
    const ops::ViewRule& rule = view_rule(g, view);
    const std::optional<TensorView> w = rule.of ? rule.of(v, n.shape, n.attrs) : std::nullopt;
    if (!w || w->data != v.data || !views_hold(g, view, *w, readers)) return false;
  }
  return true;
}

}  // namespace

std::vector<std::size_t> reader_order(const Graph& g, int id) {
  if (!is_view(g, id) || is_output(g, id)) return {};
  const int src = std::get<int>(g.node(id).args.at(0));
  if (!lays_out(g, src) || is_output(g, src)) return {};
  for (std::size_t c = 0; c < g.nodes().size(); ++c)
    for (const auto& a : g.nodes()[c].args)
      if (int(c) != id && std::holds_alternative<int>(a) && std::get<int>(a) == src) return {};
  return permutation_of(g, id);
}

void view_values(const Graph& g, const std::vector<FusedGroup>& groups,
                 std::vector<TensorView>& values, const std::set<int>& given) {
  std::map<int, int> aliases;
  std::multimap<int, int> readers;  // src -> the views read in place of its memory
  for (const auto& [view, src] : view_aliases(g, groups))
    aliases[view] = src, readers.emplace(src, view);
  std::map<int, Order> ordered;
  for (std::size_t i = 0; i < g.nodes().size(); ++i) {  // node order: operands first
    const int id = int(i);
    if (auto it = aliases.find(id); it != aliases.end()) {
      set_view(g, id, it->second, values);
      continue;
    }
    if (g.node(id).op == "input" || given.count(id)) continue;
    Order order = order_of(g, id, values, ordered);
    bool row_major = true;
    for (std::size_t d = 0; d < order.dims.size(); ++d) row_major = row_major && order.dims[d] == d;
    if (row_major) continue;
    TensorView v = values[i];
    v.strides = strides_in(g.node(id).shape, order.dims);
    if (!views_hold(g, id, v, readers)) continue;
    values[i] = v;
    ordered[id] = std::move(order);
  }
}

}  // namespace kiln
