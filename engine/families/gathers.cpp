#include "engine/families/gathers.hpp"

#include <fmt/format.h>

#include <kiln/error.hpp>

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
    const std::size_t axis = op.view.axis(x.shape, n.attrs);
    GatherSlots::Slot s{0, k, x.resolved_strides()[axis], x.shape[axis]};
    out.indices.push_back(
        op.view.index_view(w.values.at(std::size_t(grp.index_inputs[k])), n.shape, n.attrs));
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
  for (const Slot& s : slots) moved(s.slot, s.stride);
  for (const Scatter& s : scatters) moved(s.slot, s.stride);
  for (const TensorView& v : indices) views.push_back(&v);
  views.push_back(&status);
  seen.insert(seen.end(), indices.begin(), indices.end());
  seen.push_back(status);
  std::vector<const TensorView*> layout;
  for (const TensorView& v : seen) layout.push_back(&v);
  LayoutPlan lp = plan_layout(layout, outputs, shape, rows, slack, reduced);
  lp.index64 = lp.index64 || wide;
  return lp;
}

std::string GatherSlots::layout_type(const LayoutPlan& lp, std::size_t own) const {
  if (empty()) return lp.type();
  std::string gathers;
  for (const Slot& s : slots)
    gathers += fmt::format(", kiln::Gather<{}, {}, {}, {}, {}>", s.slot, own + s.index,
                           device_type_of(indices[s.index].dtype), s.stride, s.extent);
  for (const Scatter& s : scatters)
    gathers += fmt::format(", kiln::Scatter<{}, {}, {}, {}, {}>", s.slot, own + s.index,
                           device_type_of(indices[s.index].dtype), s.stride, s.limit);
  return fmt::format("kiln::Gathering<{}, {}, {}{}>", lp.type(), own + indices.size(),
                     indices.size(), gathers);
}

}  // namespace kiln
