// Specialization of the scan template (engine/families/scan/scan.hpp).
#include "engine/families/scan/scan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <kiln/error.hpp>

#include "engine/codegen/layout.hpp"

namespace kiln {

std::string ScanTemplate::expression() const {
  return codegen::render_instance(
      "kiln::scan_rows",
      {"kiln_body", "kiln_epilogue", layout, std::to_string(vec), codegen::render_index(index64),
       std::to_string(block), std::to_string(items), std::to_string(groups),
       reverse ? "true" : "false"});
}

std::string ScanTemplate::name(std::string_view stem, std::size_t dims, bool tuned) const {
  return fmt::format("{}__scan{}v{}{}{}{}", stem, dims, vec, reverse ? "_rev" : "",
                     index64 ? "_i64" : "", tuned ? fmt::format("_b{}i{}", block, items) : "");
}

const codegen::TunableTable<ScanTemplate>& scan_tunable_table() {
  static const codegen::TunableTable<ScanTemplate> table = {
      {"block", &ScanTemplate::block, {32, 64, 128, 256, 512, 1024}},
      {"items", &ScanTemplate::items, {1, 2, 4, 8}},
  };
  return table;
}

std::pair<int, int> default_scan_shape(std::int64_t groups) {
  constexpr int kItems = 4, kMaxBlock = 256;
  int block = 32;
  while (block < kMaxBlock && std::int64_t(block) * kItems < groups) block *= 2;
  const int items = int(std::clamp<std::int64_t>((groups + block - 1) / block, 1, kItems));
  return {block, items};
}

namespace autotune {
Space scan_space(const Candidate& fallback) {
  Space s;
  s.tunables = codegen::space_tunables(scan_tunable_table(), ~0u);
  s.fallback = fallback;
  s.reject = block_too_large;
  return s;
}
}  // namespace autotune

namespace {

// The slots' views (outputs, prologue inputs, epilogue inputs) with the axis last.
std::vector<TensorView> slot_views(const ScanKernel& k, const std::string& stem, std::size_t axis) {
  std::vector<TensorView> all;
  for (const TensorView& o : k.outputs) {
    if (o.shape != k.shape)
      throw ShapeError(
          fmt::format("{}: output {} is not of shape {}", stem, o.describe(), to_string(k.shape)));
    all.push_back(axis_last(o, k.shape, axis, "output"));
  }
  for (const auto* group : {&k.inputs, &k.epilogue_inputs})
    for (const TensorView& v : *group) all.push_back(axis_last(v, k.shape, axis, "input"));
  return all;
}

void check_bodies(const ScanKernel& k, const std::string& stem) {
  if (k.prologue.results.size() != 1 || k.prologue.inputs.size() != k.inputs.size() ||
      int(k.scalars.size()) != k.prologue.scalars || k.outputs.empty() ||
      k.epilogue.outputs.size() != k.outputs.size() ||
      k.epilogue.inputs.size() != k.epilogue_inputs.size() ||
      int(k.epilogue_scalars.size()) != k.epilogue.scalars)
    throw ArgumentError(fmt::format("{}: the bodies do not match their operands", stem));
}

// `t` over `tp`'s block and items (the defaults); ArgumentError for a name or value scan.cuh
// does not take.
ScanTemplate scan_shape(const Tunables& t, const ScanTemplate& tp, const std::string& stem) {
  ScanTemplate r = codegen::parse_tunables(scan_tunable_table(), t, tp, stem, "scan template");
  const int block = r.block, items = r.items;
  if (block < 32 || block > 1024 || block % 32 != 0 || items < 1 || items > 16)
    throw ArgumentError(fmt::format(
        "{}: block {} items {}: the scan template takes 32 to 1024 threads (whole warps) and 1 "
        "to 16 items",
        stem, block, items));
  return r;
}

}  // namespace

KernelLaunch specialize_scan(const ScanKernel& k, const std::string& stem, const Tunables& t) {
  check_bodies(k, stem);
  const std::int64_t rank = std::int64_t(k.shape.size());
  if (rank == 0 || k.axis < -rank || k.axis >= rank)
    throw ShapeError(
        fmt::format("{}: axis {} does not fit x {}", stem, k.axis, to_string(k.shape)));
  const std::size_t axis = std::size_t(k.axis < 0 ? k.axis + rank : k.axis);
  const std::vector<TensorView> all = slot_views(k, stem, axis);
  std::vector<const TensorView*> views;
  for (const TensorView& v : all) views.push_back(&v);
  Shape shape = k.shape;
  std::rotate(shape.begin() + std::ptrdiff_t(axis), shape.begin() + std::ptrdiff_t(axis) + 1,
              shape.end());
  const LayoutPlan lp = plan_layout(views, k.outputs.size(), shape, true, 0);

  ScanTemplate tp;
  tp.layout = lp.type();
  tp.vec = lp.vec;
  tp.index64 = lp.index64;
  tp.groups = lp.dims.back().extent;
  tp.reverse = k.reverse;
  const auto fallback = default_scan_shape(tp.groups);
  std::tie(tp.block, tp.items) = fallback;
  tp = scan_shape(t, tp, stem);

  KernelLaunch L;
  L.vec = lp.vec;
  L.groups = std::uint64_t(lp.groups);
  L.tunables = codegen::launch_tunables(scan_tunable_table(), tp, ~0u);
  L.config.block[0] = unsigned(tp.block);
  L.config.grid[0] = grid_x(tp.groups ? std::uint64_t(lp.groups / tp.groups) : 0, [&] {
    return fmt::format("{}: {} rows of {}", stem, lp.groups / std::max<std::int64_t>(tp.groups, 1),
                       to_string(k.shape));
  });
  L.spec.source = codegen::render_source(
      tp.kHeader, {{"kiln_body", &k.prologue}, {"kiln_epilogue", &k.epilogue}});
  L.spec.expression = tp.expression();
  L.spec.options = codegen::builtin_options();
  const bool tuned = std::pair(tp.block, tp.items) != fallback;
  L.spec.name = tp.name(stem, lp.dims.size(), tuned);
  for (const TensorView* v : views) L.pointers.push_back(v->data);
  L.scalars = k.scalars;
  L.scalars.insert(L.scalars.end(), k.epilogue_scalars.begin(), k.epilogue_scalars.end());
  L.layout = kiln_layout(L.pointers, L.scalars, std::uint64_t(tp.groups), lp.index64);
  return L;
}

}  // namespace kiln
