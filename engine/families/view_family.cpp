// The view family: a reshape that cannot share its operand's memory (engine/fusion.hpp) copies
// it with the elementwise template, one side read in the other's shape (row-major order is the
// same); a slice copies its range, the operand read through a view that starts there. Views that
// share memory, and slices a product's kernel writes, have no kernel.
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "engine/families/elementwise.hpp"
#include "engine/families/family.hpp"

namespace kiln {
namespace {

// `v` (contiguous) with `shape`.
TensorView reshaped(TensorView v, const Shape& shape) {
  v.shape = shape;
  v.strides.clear();
  return v;
}

// `v` narrowed to the range of a slice with `attrs` (its address moved to the range's first
// element); returns how many bytes it moved.
std::int64_t sliced(TensorView& v, const Attrs& attrs, const std::string& stem) {
  const ops::SliceRange r = ops::slice_range(v.shape, attrs, stem);
  v.strides = v.resolved_strides();
  const std::int64_t offset = r.start * v.strides[r.axis] * std::int64_t(size_of(v.dtype));
  v.shape[r.axis] = r.stop - r.start;
  v.data += std::uint64_t(offset);
  return offset;
}

class ViewFamily final : public Family {
 public:
  std::string_view name() const override { return "view"; }
  bool claims(const FusedGroup& grp, const Graph&) const override {
    return grp.anchor && grp.anchor->fusion.kind == ops::FusionKind::view;
  }
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    const FusedGroup& grp = w.group;
    TensorView out = w.values.at(std::size_t(grp.outputs[0]));
    TensorView in = w.values.at(std::size_t(grp.inputs[0]));
    std::int64_t offset = 0;  // bytes from the operand's address to the slice's first element
    if (grp.anchor->name == "slice")
      offset = sliced(in, w.shapes.node(grp.anchor_node).attrs, grp.stem);
    else if (out.is_contiguous())
      out = reshaped(out, in.shape);
    else if (in.is_contiguous())
      in = reshaped(in, out.shape);
    else
      throw ShapeError(
          fmt::format("{}: a reshape copies from {} into {}: one of them must be "
                      "contiguous",
                      grp.stem, in.describe(), out.describe()));
    codegen::Body copy;
    copy.inputs = {in.dtype};
    copy.outputs = {out.dtype};
    copy.steps = {{"kiln::op::Identity", {{codegen::Ref::Kind::input, 0}}}};
    copy.results = {{codegen::Ref::Kind::step, 0}};
    KernelLaunch L =
        specialize_elementwise(copy, grp.stem, {out}, {in}, {}, elementwise_tunables(t, grp.stem));
    if (offset != 0) L.offsets = {0, offset};
    return L;
  }
  autotune::Space space(const FusedGroup&, const KernelLaunch&, const Target&) const override {
    return autotune::elementwise_space();
  }
  std::vector<std::string_view> headers() const override { return {"elementwise.cuh"}; }
};

}  // namespace

const Family& view_family() {
  static const ViewFamily family;
  return family;
}

}  // namespace kiln
