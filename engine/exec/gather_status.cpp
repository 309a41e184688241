#include "engine/exec/gather_status.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <kiln/error.hpp>

#include "engine/ir/graph_ops.hpp"
#include "engine/runtime/context.hpp"

namespace kiln::detail {

void describe_gathers(const Graph& bound, const FusedGroup& grp,
                      const std::vector<TensorView>& values, PreparedCall& call,
                      PreparedCall::Launch& l) {
  l.status_word = call.status_words++;
  const std::size_t first = l.nodes.size() - 1 - grp.index_inputs.size();
  if (grp.anchor && grp.anchor->fusion.in_place) {  // a slice_update's start tensor
    const Graph::Node& n = bound.node(grp.anchor_node);
    const Shape& dst = bound.node(std::get<int>(n.args[0])).shape;
    const Shape& src = bound.node(std::get<int>(n.args[1])).shape;
    const std::int64_t a = n.attrs.integer("axis").value_or(-1), r = std::int64_t(dst.size());
    const std::size_t axis = std::size_t(a < 0 ? a + r : a);
    PreparedCall::Launch::Gather g;
    g.slot = std::uint32_t(first);
    g.what = fmt::format("{} '{}': pos '{}' holds", n.op, printable_name(n.name),
                         printable_name(bound.node(grp.index_inputs[0]).name));
    g.extent = dst[axis] - src[axis] + 1;
    g.tail = "it wrote nothing (src's entries must fit in dst's axis from the start)";
    l.gathers.push_back(std::move(g));
    return;
  }
  for (std::size_t k = 0; k < grp.gather_views.size(); ++k) {
    const Graph::Node& n = bound.node(grp.gather_views[k]);
    const ops::OpDef& op = op_def(bound, n.op);
    if (op.view.remap) continue;  // reads at computed positions: none to report
    const int x = std::get<int>(n.args[0]);
    const Shape& shape = values.at(std::size_t(x)).shape;
    const std::size_t axis = op.view.axis(shape, n.attrs);
    PreparedCall::Launch::Gather g;
    g.slot = std::uint32_t(first + k);
    g.what = fmt::format("{} '{}': {} '{}' holds", op.name, printable_name(n.name),
                         op.operands.at(1), printable_name(bound.node(grp.index_inputs[k]).name));
    g.extent = shape.at(axis);
    g.tail = "it read entry 0 instead (indices must lie in the axis they pick along)";
    l.gathers.push_back(std::move(g));
  }
}

void bind_status(PreparedCall& call, Engine& engine) {
  if (call.status_words == 0) return;
  if (call.status.view().data == 0) {
    call.status = engine.empty({std::int64_t(call.status_words)}, DType::i64);
    call.status.fill_bytes(0);
  }
  for (PreparedCall::Launch& l : call.launches)
    if (!l.gathers.empty())
      l.params->set_pointer(l.nodes.size() - 1, call.status.view().data + 8 * l.status_word);
}

void check_status(PreparedCall& call, CUstream stream) {
  if (call.status_words == 0 || runtime::capturing(stream)) return;
  const std::uint64_t base = call.status.view().data;
  const std::vector<std::uint64_t> words = runtime::read_words(stream, base, call.status_words);
  for (const PreparedCall::Launch& l : call.launches) {
    const std::uint64_t w = l.gathers.empty() ? 0 : words[l.status_word];
    if (w == 0) continue;
    runtime::zero_words(stream, base, call.status_words);
    const std::int64_t index = std::int64_t(w) >> 16;
    const auto g = std::find_if(l.gathers.begin(), l.gathers.end(),
                                [&](const auto& g) { return g.slot == (w & 0xffff); });
    if (g == l.gathers.end())
      throw Error(fmt::format("internal error: kernel {} reported index {} from slot {}",
                              l.launch.spec.name, index, w & 0xffff));
    throw ArgumentError(
        fmt::format("{} index {}, outside [0, {}): {}", g->what, index, g->extent, g->tail));
  }
}

}  // namespace kiln::detail
