// The view family: a reshape that cannot share its operand's memory (engine/fusion.hpp) copies
// it with the elementwise template, one side read in the other's shape (row-major order is the
// same). Views that share memory have no kernel.
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

class ViewFamily final : public Family {
 public:
  std::string_view name() const override { return "view"; }
  bool claims(const FusedGroup& grp, const Graph&) const override {
    return grp.anchor && grp.anchor->fusion == ops::FusionClass::view;
  }
  KernelLaunch specialize(const GroupWork& w, const Tunables& t) const override {
    const FusedGroup& grp = w.group;
    TensorView out = w.values.at(std::size_t(grp.outputs[0]));
    TensorView in = w.values.at(std::size_t(grp.inputs[0]));
    if (out.is_contiguous())
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
    return specialize_elementwise(copy, grp.stem, {out}, {in}, {},
                                  elementwise_tunables(t, grp.stem));
  }
  autotune::Space space(const FusedGroup&, const KernelLaunch&, const std::string&) const override {
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
