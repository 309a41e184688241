#include "engine/families/elementwise/elementwise.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <kiln/error.hpp>

namespace kiln {
namespace {

constexpr int kDefaultBlock = ElementwiseTunables::kDefaultBlock;
constexpr int kDefaultUnroll = ElementwiseTunables::kDefaultUnroll;

}  // namespace

const codegen::TunableTable<ElementwiseTunables>& elementwise_tunable_table() {
  using T = ElementwiseTunables;
  static const codegen::TunableTable<T> table = {
      {"block", &T::block, {64, 128, 256, 512, 1024}},
      {"unroll", &T::unroll, {1, 2, 4, 8}},
  };
  return table;
}

ElementwiseTunables elementwise_tunables(const Tunables& t, const std::string& stem) {
  return codegen::parse_tunables(elementwise_tunable_table(), t, ElementwiseTunables{}, stem,
                                 "elementwise template");
}

std::string ElementwiseTemplate::expression() const {
  std::vector<std::string> args = {"kiln_body", layout, std::to_string(vec),
                                   codegen::render_index(index64), std::to_string(block),
                                   std::to_string(unroll)};
  if (beside) args.push_back("true");
  return codegen::render_instance("kiln::elementwise", args);
}

std::string ElementwiseTemplate::name(std::string_view stem, std::size_t dims) const {
  const bool tuned = block != kDefaultBlock || unroll != kDefaultUnroll;
  return fmt::format("{}__r{}v{}{}{}", stem, dims, vec, index64 ? "_i64" : "",
                     tuned ? fmt::format("_b{}u{}", block, unroll) : "");
}

Window window_along(TensorView v, std::size_t axis, std::int64_t start, std::int64_t len) {
  v.strides = v.resolved_strides();
  v.shape[axis] = len;
  const std::int64_t offset = start * v.strides[axis] * std::int64_t(size_of(v.dtype));
  v.data += std::uint64_t(offset);
  v.capacity -= std::min(v.capacity, std::uint64_t(offset));
  return {v, offset};
}

KernelLaunch specialize_elementwise(const codegen::Body& body, const std::string& stem,
                                    const std::vector<TensorView>& outputs,
                                    const std::vector<TensorView>& inputs,
                                    std::vector<float> scalars, ElementwiseTunables tunables,
                                    const GatherSlots& gathers, bool beside) {
  const int block = tunables.block ? tunables.block : kDefaultBlock;
  const int unroll = tunables.unroll ? tunables.unroll : kDefaultUnroll;
  if (block < 32 || block > 1024 || block % 32 != 0 || unroll < 1 || unroll > 16)
    throw ArgumentError(
        fmt::format("{}: bad elementwise tunables block {} unroll {}", stem, block, unroll));
  if (outputs.empty() || outputs.size() != body.outputs.size() ||
      inputs.size() != body.inputs.size() || int(scalars.size()) != body.scalars)
    throw ArgumentError(
        fmt::format("{}: {} outputs, {} inputs, {} scalars do not match the body's {}, {}, {}",
                    stem, outputs.size(), inputs.size(), scalars.size(), body.outputs.size(),
                    body.inputs.size(), body.scalars));
  const Shape& shape = outputs[0].shape;
  std::vector<const TensorView*> views;
  for (const TensorView& o : outputs) {
    if (o.shape != shape)
      throw ShapeError(fmt::format("{}: outputs of one kernel must share a shape: {} vs {}", stem,
                                   o.describe(), to_string(shape)));
    views.push_back(&o);
  }
  for (const TensorView& i : inputs) views.push_back(&i);
  const std::size_t own = views.size();
  const LayoutPlan lp = gathers.plan(views, outputs.size(), shape, false, block * unroll);
  KernelLaunch L;
  const int vec = lp.vec;
  const std::int64_t groups = lp.groups;
  ElementwiseTemplate tp;
  tp.layout = gathers.layout_type(lp, own);
  tp.vec = vec;
  tp.index64 = lp.index64;
  tp.block = block, tp.unroll = unroll;
  tp.beside = beside;
  L.spec.source = codegen::render_source(tp.kHeader, {{"kiln_body", &body}});
  L.spec.expression = tp.expression();
  L.spec.options = codegen::builtin_options();
  L.spec.name = tp.name(stem, lp.dims.size());
  L.vec = vec;
  L.groups = std::uint64_t(groups);
  L.config.block[0] = unsigned(block);
  L.tunables = codegen::launch_tunables(elementwise_tunable_table(), {block, unroll}, ~0u);
  const std::uint64_t per_block = std::uint64_t(block) * unroll;
  const std::uint64_t blocks = (std::uint64_t(groups) + per_block - 1) / per_block;
  L.config.grid[0] = grid_x(blocks, [&] {
    return fmt::format("{}: shape {} in blocks of {} threads", stem, to_string(shape), block);
  });
  for (const TensorView* v : views) L.pointers.push_back(v->data);
  L.scalars = std::move(scalars);
  L.layout = kiln_layout(L.pointers, L.scalars, L.groups, lp.index64);
  return L;
}

}  // namespace kiln
