#include "engine/rows.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <kiln/error.hpp>

namespace kiln {

codegen::Body identity_epilogue(DType dtype) {
  codegen::Body b;
  b.outputs = {dtype};
  b.results = {{codegen::Ref::Kind::row, 0}};
  return b;
}

namespace {

constexpr int kMaxItems = 16;  // rows.cuh's limit

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

RowTunables row_tunables(const Tunables& t, const std::string& stem) {
  RowTunables r;
  for (const auto& [name, value] : t) {
    if (name == "block") r.block = value;
    else if (name == "items") r.items = value;
    else throw ArgumentError(fmt::format("{}: '{}' is not a tunable of the row template (block, items)", stem, name));
  }
  return r;
}

RowTunables default_row_tunables(std::int64_t row_groups, int vec) {
  const std::int64_t most = std::min<std::int64_t>(kMaxItems, std::max(1, 32 / vec));
  // About 64 bytes of the row per thread at full width: 16 f32 or 32 bf16/f16 values (the
  // tuning probe, now `kiln tune`, found 32 best for bf16 on an H100: bench/NOTES.md).
  const std::int64_t want = std::min<std::int64_t>(most, vec >= 8 ? 4 : std::max(1, 16 / vec));
  std::int64_t items = std::max<std::int64_t>(1, std::min(want, ceil_div(row_groups, 32)));
  while (items < most && items * 1024 < row_groups) items = std::min(most, items * 2);
  if (items * 1024 < row_groups) return {1024, 0};
  return {int(std::max<std::int64_t>(32, ceil_div(ceil_div(row_groups, items), 32) * 32)), int(items)};
}

std::string reject_row_tunables(const RowTunables& t, std::int64_t row_groups, int vec) {
  if (t.block < 32 || t.block > 1024 || t.block % 32)
    return fmt::format("{} threads per block: a row block is 32 to 1024 threads, whole warps", t.block);
  if (t.items < 0 || t.items > kMaxItems) return fmt::format("{} groups per thread: 0 to {}", t.items, kMaxItems);
  if (t.items * vec > 32) return fmt::format("{} values per thread in registers: at most 32", t.items * vec);
  const std::int64_t per_pass = std::int64_t(t.block) * std::max(t.items, 1);
  if (t.items > 0 && per_pass < row_groups)
    return fmt::format("{} threads x {} groups do not cover a row of {} groups", t.block, t.items, row_groups);
  if ((t.block > 32 || t.items > 1) && per_pass / 2 >= row_groups)
    return fmt::format("{} threads x {} groups for rows of {} groups: half would idle", t.block, std::max(t.items, 1), row_groups);
  return "";
}

KernelLaunch specialize_rows(const RowKernel& k, const std::string& stem, const Shape& shape, RowTunables t) {
  if (shape.empty()) throw ShapeError(fmt::format("{}: a row op needs at least one axis", stem));
  if (k.prologue.results.size() != 1 || k.prologue.inputs.size() != k.inputs.size() ||
      int(k.scalars.size()) != k.prologue.scalars || k.epilogue.outputs.size() != k.outputs.size() ||
      k.epilogue.inputs.size() != k.epilogue_inputs.size() || int(k.epilogue_scalars.size()) != k.epilogue.scalars ||
      k.outputs.empty() || (k.op->reduces && (k.outputs.size() != 1 || !k.epilogue_inputs.empty())))
    throw ArgumentError(fmt::format("{}: the bodies do not match their operands", stem));
  std::vector<TensorView> outs = k.outputs;
  for (TensorView& o : outs) {
    if (!k.op->reduces) {
      if (o.shape != shape) throw ShapeError(fmt::format("{}: output {} is not of shape {}", stem, o.describe(), to_string(shape)));
      continue;
    }
    // A reduction's output, seen as [rows..., 1], broadcasts over the row.
    Shape want = shape;
    want.back() = 1;
    Shape strides = o.resolved_strides();
    if (o.shape.size() + 1 == shape.size()) {
      o.shape.push_back(1);
      strides.push_back(1);
    }
    if (o.shape != want) throw ShapeError(fmt::format("{}: output {} does not fit rows of {}", stem, o.describe(), to_string(shape)));
    o.strides = strides;
  }
  std::vector<const TensorView*> views;
  for (const std::vector<TensorView>* group : {static_cast<const std::vector<TensorView>*>(&outs), &k.inputs, &k.extras, &k.epilogue_inputs})
    for (const TensorView& v : *group) views.push_back(&v);
  const LayoutPlan lp = plan_layout(views, outs.size(), shape, true, 0);
  const std::int64_t per_row = lp.dims.back().extent;
  const RowTunables fallback = default_row_tunables(per_row, lp.vec);
  if (t.block == 0) {
    t = fallback;
  } else if (std::string why = reject_row_tunables(t, per_row, lp.vec); !why.empty()) {
    throw ArgumentError(fmt::format("{}: {}", stem, why));
  }

  std::vector<std::string_view> extra_types;
  for (const TensorView& v : k.extras) extra_types.push_back(device_type_of(v.dtype));
  std::string epilogue = codegen::render_body(k.epilogue);
  epilogue.replace(epilogue.find("struct kiln_body"), 16, "struct kiln_epilogue");
  KernelLaunch L;
  L.index64 = lp.index64;
  L.vec = lp.vec;
  L.spec.source = "#include <kiln/rows.cuh>\n\n" + codegen::render_body(k.prologue) + "\n" + epilogue;
  L.spec.expression = fmt::format("kiln::rows<kiln_body, {}, kiln_epilogue, kiln::Types<{}>, {}, {}, {}, {}, {}>", k.op->functor,
                                  fmt::join(extra_types, ", "), lp.type(), lp.vec,
                                  lp.index64 ? "unsigned long long" : "unsigned int", t.block, t.items);
  L.spec.source = codegen::finish_source(L.spec.source, L.spec.expression);
  L.spec.options = {"-std=c++17"};
  const bool tuned = t.block != fallback.block || t.items != fallback.items;
  L.spec.name = fmt::format("{}__r{}v{}{}{}", stem, lp.dims.size(), lp.vec, lp.index64 ? "_i64" : "",
                            tuned ? fmt::format("_b{}i{}", t.block, t.items) : "");
  L.groups = std::uint64_t(lp.groups);
  L.index_arg = std::uint64_t(per_row);
  L.block = unsigned(t.block);
  L.grid = per_row ? unsigned(lp.groups / per_row) : 0;
  for (const TensorView* v : views) L.pointers.push_back(v->data);
  L.scalars = k.scalars;
  L.scalars.push_back(float(k.eps));
  L.scalars.insert(L.scalars.end(), k.epilogue_scalars.begin(), k.epilogue_scalars.end());
  return L;
}

}  // namespace kiln
