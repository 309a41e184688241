#include "engine/tune/tune_buffers.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "engine/ir/graph_ops.hpp"
#include "engine/tune/tuner.hpp"

namespace kiln::autotune {
namespace {

// The gather views `grp` reads in place (not its own copy's), each with its operand x: the
// buffers hold x, and the view is x's memory read at the indices.
std::vector<std::pair<int, int>> gathered(const Graph& g, const FusedGroup& grp) {
  std::vector<std::pair<int, int>> out;
  for (int id : grp.gather_views)
    if (id != grp.anchor_node) out.emplace_back(id, std::get<int>(g.node(id).args[0]));
  return out;
}

// Random indices into the axis gather view `view` reads along, `n` of them.
std::vector<unsigned char> random_indices(const Graph& g, int view, DType t, std::int64_t n,
                                          std::uint64_t seed) {
  const Graph::Node& v = g.node(view);
  const Shape& x = g.node(std::get<int>(v.args[0])).shape;
  const std::int64_t extent = x.at(op_def(g, v.op).view.axis(x, v.attrs));
  std::vector<unsigned char> h = random_host(DType::f32, n, seed);  // in [-3, 3)
  std::vector<unsigned char> out(std::size_t(n) * size_of(t));
  for (std::int64_t i = 0; i < n; ++i) {
    float f;
    std::memcpy(&f, h.data() + 4 * i, 4);
    const double at = std::floor((f + 3) / 6 * double(extent));
    store_element(t, std::clamp(at, 0.0, double(std::max<std::int64_t>(extent - 1, 0))),
                  out.data() + std::size_t(i) * size_of(t));
  }
  return out;
}

// `v`'s strides where they lay its elements out densely in some order of its dims (a
// channels_last view, a permuted one), so that a buffer allocated so is read as the plan reads
// it; else empty (row-major).
Shape dense_strides(const TensorView& v) {
  if (v.strides.empty()) return {};
  std::vector<std::size_t> order(v.shape.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return v.strides[a] > v.strides[b]; });
  std::int64_t step = 1;
  for (std::size_t i = order.size(); i-- > 0;) {
    if (v.shape[order[i]] > 1 && v.strides[order[i]] != step) return {};
    step *= v.shape[order[i]];
  }
  return v.strides;
}

}  // namespace

Buffers make_buffers(Engine& engine, const detail::PlanImpl& p, const FusedGroup& grp,
                     int l2_bytes, const std::vector<TensorView>& planned) {
  const auto views = gathered(p.graph, grp);
  std::vector<int> reads;
  for (const std::vector<int>* ids : grp.reads())
    for (int id : *ids) {
      for (const auto& [view, x] : views) id = id == view ? x : id;
      if (std::find(reads.begin(), reads.end(), id) == reads.end()) reads.push_back(id);
    }
  std::int64_t bytes = 0;
  for (const std::vector<int>* ids : {static_cast<const std::vector<int>*>(&reads), &grp.outputs})
    for (int id : *ids)
      bytes += numel_of(p.graph.node(id).shape) * std::int64_t(size_of(p.graph.node(id).dtype));
  const std::int64_t sets = std::clamp<std::int64_t>(
      (2 * std::int64_t(l2_bytes)) / std::max<std::int64_t>(bytes, 1) + 1, 1, 64);
  Buffers b;
  b.bytes = bytes;
  std::vector<TensorView> descs;
  for (const auto& n : p.graph.nodes()) descs.push_back(detail::PlanImpl::desc(n));
  std::map<int, std::vector<unsigned char>> host;
  for (int id : reads) {
    const auto& n = p.graph.node(id);
    host[id] = random_host(n.dtype, numel_of(n.shape), std::uint64_t(id) + 1);
  }
  for (std::size_t k = 0; k < grp.index_inputs.size(); ++k) {  // indices within their axes
    if (op_def(p.graph, p.graph.node(grp.gather_views[k]).op).view.remap)
      continue;  // a remap view's coordinate slot: its x, read as such
    const auto& n = p.graph.node(grp.index_inputs[k]);
    host[grp.index_inputs[k]] = random_indices(p.graph, grp.gather_views[k], n.dtype,
                                               numel_of(n.shape), std::uint64_t(k) + 7);
  }
  for (std::int64_t s = 0; s < sets; ++s) {
    b.values.push_back(descs);
    for (const std::vector<int>* ids : {static_cast<const std::vector<int>*>(&reads), &grp.outputs})
      for (int id : *ids) {
        const auto& n = p.graph.node(id);
        b.tensors.push_back(ids == &reads ? engine.from_host(n.shape, n.dtype, host[id].data())
                                          : engine.empty(n.shape, n.dtype));
        if (const Shape st = dense_strides(planned.at(std::size_t(id))); !st.empty())
          b.tensors.back() = b.tensors.back().with_strides(st);
        b.values.back()[std::size_t(id)] = b.tensors.back().view();
        if (s == 0 && ids == &grp.outputs) b.checked.push_back(b.tensors.back());
      }
    for (const auto& [view, x] : views) {
      const Graph::Node& v = p.graph.node(view);
      b.values.back()[std::size_t(view)] =
          *op_def(p.graph, v.op).view.of(b.values.back()[std::size_t(x)], v.shape, v.attrs);
    }
  }
  if (!grp.index_inputs.empty()) {
    b.status = engine.empty({1}, DType::i64);
    b.status.fill_bytes(0);
  }
  return b;
}

}  // namespace kiln::autotune
