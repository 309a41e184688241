#include "engine/families/gathers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <kiln/error.hpp>

#include "engine/codegen/codegen.hpp"
#include "engine/ir/graph_ops.hpp"

namespace kiln {
namespace {

constexpr std::int64_t kStatusAddress = 256;  // a placeholder, as aligned as allocations are

// The largest element offset `v` reaches, plus one.
std::int64_t span_of(const TensorView& v) {
  const Shape st = v.resolved_strides();
  std::int64_t span = 1;
  for (std::size_t d = 0; d < v.shape.size(); ++d)
    if (v.shape[d] > 0) span += (v.shape[d] - 1) * st[d];
  return span;
}

// Remap view `n`'s slot (of x), with its coordinate slot's view over the view's shape: each
// remapped axis's coordinate at a radix of its own; 1 for the output's innermost dim (so that
// packs along it read the coordinate per element) and multiples of 16 for the others (so that
// the coordinate slot never narrows the packs along the dim inside them).
TensorView remap_slot(const Graph::Node& n, const ops::OpDef& op, const TensorView& x,
                      const TensorView* out, GatherSlots::Slot& s) {
  const ops::Remap r = op.view.remap(x.shape, n.attrs);
  const Shape xs = x.resolved_strides();
  std::size_t inner = n.shape.size();  // the output's innermost dim, as one of the view's
  if (out && out->shape.size() >= n.shape.size()) {
    const Shape os = out->resolved_strides();
    const std::size_t lead = out->shape.size() - n.shape.size();
    std::int64_t least = -1;
    for (std::size_t d = lead; d < out->shape.size(); ++d)
      if (out->shape[d] > 1 && (least < 0 || os[d] < least)) least = os[d], inner = d - lead;
  }
  TensorView coord;
  coord.dtype = DType::i32;
  coord.shape = n.shape;
  coord.strides.assign(n.shape.size(), 0);
  coord.data = kStatusAddress;
  std::int64_t next = 1;
  std::vector<ops::RemapAxis> axes = r.axes;  // the innermost first
  std::stable_partition(axes.begin(), axes.end(), [&](const auto& a) { return a.axis == inner; });
  for (const ops::RemapAxis& a : axes) {
    if (a.axis != inner) next = (next + 15) / 16 * 16;
    if (!s.remap.empty()) s.remap.back().span = next / s.remap.back().radix;
    s.remap.push_back({next, n.shape[a.axis], a.lo, a.scale, xs[a.axis], x.shape[a.axis]});
    coord.strides[a.axis] = next;
    next *= std::max<std::int64_t>(n.shape[a.axis], 1);
  }
  s.fill = r.fill;
  s.remapped = true;
  return coord;
}

}  // namespace

GatherSlots gather_slots(const GroupWork& w, const std::vector<TensorView>& views,
                         std::size_t outputs) {
  const FusedGroup& grp = w.group;
  GatherSlots out;
  if (grp.gather_views.empty()) return out;
  const bool copy = grp.anchor && grp.anchor_node == grp.gather_views[0];
  const std::vector<int> nodes = grp.pointer_nodes();
  for (std::size_t k = 0; k < grp.gather_views.size(); ++k) {
    const int id = grp.gather_views[k];
    const Graph::Node& n = w.shapes.node(id);
    const ops::OpDef& op = op_def(w.shapes, n.op);
    const TensorView& x = w.values.at(std::size_t(std::get<int>(n.args[0])));
    GatherSlots::Slot s;
    s.index = k;
    if (op.view.remap) {
      out.indices.push_back(remap_slot(n, op, x, outputs ? &views[0] : nullptr, s));
    } else {
      const std::size_t axis = op.view.axis(x.shape, n.attrs);
      s.stride = x.resolved_strides()[axis];
      s.extent = x.shape[axis];
      out.indices.push_back(
          op.view.index_view(w.values.at(std::size_t(grp.index_inputs[k])), n.shape, n.attrs));
    }
    out.wide = out.wide || span_of(x) >= (std::int64_t(1) << 31);
    for (std::size_t slot = outputs; slot < views.size(); ++slot)
      if (copy ? slot == outputs : nodes[slot] == id) {
        s.slot = slot;
        out.slots.push_back(s);
      }
  }
  return out;
}

GatherSlots::GatherSlots() {
  status.dtype = DType::i64;
  status.data = kStatusAddress;
}

LayoutPlan GatherSlots::plan(std::vector<const TensorView*>& views, std::size_t outputs,
                             const Shape& shape, bool rows, std::int64_t slack,
                             const std::vector<bool>& reduced) const {
  if (empty()) return plan_layout(views, outputs, shape, rows, slack, reduced);
  std::vector<TensorView> seen;
  for (const TensorView* v : views) seen.push_back(*v);
  const auto moved = [&](std::size_t slot, std::int64_t stride) {  // by i * stride elements
    const std::uint64_t step = std::uint64_t(stride) * size_of(seen[slot].dtype);
    if (step != 0) seen[slot].data |= step & (~step + 1);
  };
  for (const Slot& s : slots) {
    moved(s.slot, s.stride);
    for (const Slot::Axis& a : s.remap) moved(s.slot, a.stride);
  }
  for (const Scatter& s : scatters) moved(s.slot, s.stride);
  for (const TensorView& v : indices) views.push_back(&v);
  views.push_back(&status);
  seen.insert(seen.end(), indices.begin(), indices.end());
  seen.push_back(status);
  std::vector<const TensorView*> layout;
  for (const TensorView& v : seen) layout.push_back(&v);
  // A gathering slot packs V of its elements in registers: at most 16 bytes of them.
  int max_vec = 16;
  for (const Slot& s : slots) max_vec = std::min(max_vec, int(16 / size_of(seen[s.slot].dtype)));
  LayoutPlan lp = plan_layout(layout, outputs, shape, rows, slack, reduced, max_vec);
  lp.index64 = lp.index64 || wide;
  return lp;
}

std::string GatherSlots::layout_type(const LayoutPlan& lp, std::size_t own) const {
  if (empty()) return lp.type();
  std::string gathers;
  for (const Slot& s : slots) {
    if (!s.remapped) {
      gathers += fmt::format(", kiln::Gather<{}, {}, {}, {}, {}>", s.slot, own + s.index,
                             device_type_of(indices[s.index].dtype), s.stride, s.extent);
      continue;
    }
    std::vector<std::string> axes;
    for (const Slot::Axis& a : s.remap)
      axes.push_back(codegen::render_instance(
          "kiln::RemapAxis", {std::to_string(a.radix), std::to_string(a.span),
                              std::to_string(a.lo), std::to_string(a.scale),
                              std::to_string(a.stride), std::to_string(a.x_extent)}));
    std::uint64_t fill = 0;
    std::memcpy(&fill, &s.fill, sizeof fill);
    std::vector<std::string> args = {std::to_string(s.slot), std::to_string(own + s.index),
                                     fmt::format("{}ull", fill)};
    args.insert(args.end(), axes.begin(), axes.end());
    gathers += ", " + codegen::render_instance("kiln::Remap", args);
  }
  for (const Scatter& s : scatters)
    gathers += fmt::format(", kiln::Scatter<{}, {}, {}, {}, {}>", s.slot, own + s.index,
                           device_type_of(indices[s.index].dtype), s.stride, s.limit);
  return fmt::format("kiln::Gathering<{}, {}, {}{}>", lp.type(), own + indices.size(),
                     indices.size(), gathers);
}

}  // namespace kiln
