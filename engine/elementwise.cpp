#include "engine/elementwise.hpp"

#include <fmt/format.h>

#include <kiln/error.hpp>

namespace kiln {
namespace {

constexpr int kSlots = 4;  // out, in0, in1, in2
constexpr int kDefaultBlock = 256;
constexpr int kDefaultUnroll = 2;  // measured best or within noise of best on H200 (bench/NOTES.md)

struct Dim {
  std::int64_t extent;
  std::int64_t stride[kSlots];  // 0 for broadcast or non-tensor slots
};

// Strides of `v` broadcast to `shape` (right-aligned); ShapeError if it does not broadcast.
std::vector<std::int64_t> broadcast_strides(const TensorView& v, const Shape& shape, const char* role) {
  const Shape vs = v.resolved_strides();
  if (vs.size() != v.shape.size())
    throw ShapeError(fmt::format("{} view {} has {} strides for {} dims", role, v.describe(), vs.size(), v.shape.size()));
  if (v.shape.size() > shape.size())
    throw ShapeError(fmt::format("{} view {} has more dims than the result {}", role, v.describe(), to_string(shape)));
  std::vector<std::int64_t> out(shape.size(), 0);
  const std::size_t lead = shape.size() - v.shape.size();
  for (std::size_t i = 0; i < v.shape.size(); ++i) {
    if (vs[i] < 0)
      throw ShapeError(fmt::format("{} view {} has a negative stride; kiln needs non-negative strides", role, v.describe()));
    if (v.shape[i] == shape[lead + i]) out[lead + i] = v.shape[i] == 1 ? 0 : vs[i];
    else if (v.shape[i] != 1)
      throw ShapeError(fmt::format("{} view {} does not broadcast to {}", role, v.describe(), to_string(shape)));
  }
  return out;
}

std::string dtype_list(const std::vector<DType>& ts) {
  std::vector<std::string_view> names;
  for (DType t : ts) names.push_back(name_of(t));
  return fmt::format("{}", fmt::join(names, "_"));
}

}  // namespace

ElementwiseLaunch specialize_elementwise(const ops::OpDef& op, const TensorView& out,
                                         const std::vector<Operand>& operands, ElementwiseTunables tunables) {
  const int block = tunables.block ? tunables.block : kDefaultBlock;
  const int unroll = tunables.unroll ? tunables.unroll : kDefaultUnroll;
  if (block < 32 || block > 1024 || block % 32 != 0 || unroll < 1 || unroll > 16)
    throw ArgumentError(fmt::format("{}: bad elementwise tunables block {} unroll {}", op.name, block, unroll));
  if (operands.size() > 3) throw ArgumentError(fmt::format("{}: at most 3 kernel operands", op.name));
  const Shape& shape = out.shape;
  const std::int64_t numel = numel_of(shape);
  ElementwiseLaunch L;

  // Slot views and dtypes.
  const TensorView* views[kSlots] = {&out, nullptr, nullptr, nullptr};
  std::string types[kSlots] = {std::string(device_type_of(out.dtype)), "kiln::None", "kiln::None", "kiln::None"};
  std::vector<DType> tensor_dtypes;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    if (auto* v = std::get_if<TensorView>(&operands[i])) {
      views[i + 1] = v;
      types[i + 1] = device_type_of(v->dtype);
      tensor_dtypes.push_back(v->dtype);
    } else {
      types[i + 1] = "kiln::Scalar";
      L.scalars[i] = float(std::get<double>(operands[i]));
    }
  }

  // Per-dim strides of every slot, unit dims dropped.
  std::vector<std::vector<std::int64_t>> strides(kSlots);
  for (int s = 0; s < kSlots; ++s)
    strides[s] = views[s] ? broadcast_strides(*views[s], shape, s == 0 ? "output" : "input")
                          : std::vector<std::int64_t>(shape.size(), 0);
  std::vector<Dim> dims;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    Dim dim{shape[d], {}};
    for (int s = 0; s < kSlots; ++s) dim.stride[s] = strides[s][d];
    if (dim.stride[0] == 0)
      throw ShapeError(fmt::format("output view {} has stride 0 in dim {}: its elements overlap", out.describe(), d));
    dims.push_back(dim);
  }
  // Coalesce: merge an outer dim into the inner one when every slot steps through both as one.
  std::vector<Dim> merged;
  for (const Dim& dim : dims) {
    if (!merged.empty()) {
      Dim& outer = merged.back();  // `merged` is outermost first; `dim` is inner to it
      bool ok = true;
      for (int s = 0; s < kSlots; ++s) ok = ok && outer.stride[s] == dim.stride[s] * dim.extent;
      if (ok) {
        outer.extent *= dim.extent;
        for (int s = 0; s < kSlots; ++s) outer.stride[s] = dim.stride[s];
        continue;
      }
    }
    merged.push_back(dim);
  }
  if (merged.empty()) merged.push_back(Dim{1, {1, 0, 0, 0}});

  // Vector width: a 16-byte pack of the widest dtype, if every tensor slot allows it.
  std::size_t widest = size_of(out.dtype);
  for (DType t : tensor_dtypes) widest = std::max(widest, size_of(t));
  int vec = 1;
  for (int v = int(16 / widest); v >= 2 && vec == 1; v /= 2) {
    const Dim& inner = merged.back();
    bool ok = inner.extent % v == 0;
    for (int s = 0; s < kSlots && ok; ++s) {
      if (!views[s]) continue;
      const std::int64_t is = inner.stride[s];
      if (is == 0 && s != 0) continue;  // broadcast along the inner dim: one load per pack
      ok = is == 1 && views[s]->data % (v * size_of(views[s]->dtype)) == 0;
      for (std::size_t d = 0; d + 1 < merged.size() && ok; ++d) ok = merged[d].stride[s] % v == 0;
    }
    if (ok) vec = v;
  }
  merged.back().extent /= vec;
  for (int s = 0; s < kSlots; ++s) merged.back().stride[s] *= vec;

  // Index width: 32-bit unless an iteration count or offset reaches 2^31.
  std::int64_t groups = numel == 0 ? 0 : 1;
  std::int64_t max_offset[kSlots] = {0, 0, 0, 0};
  for (const Dim& d : merged) {
    groups *= d.extent;
    for (int s = 0; s < kSlots; ++s) max_offset[s] += (d.extent - 1) * d.stride[s];
  }
  L.index64 = groups + block * unroll >= (1ll << 31);
  for (int s = 0; s < kSlots; ++s) L.index64 = L.index64 || max_offset[s] + vec >= (1ll << 31);

  std::vector<std::string> layout;
  for (const Dim& d : merged)
    layout.push_back(fmt::format("kiln::Dim<{}, {}, {}, {}, {}>", d.extent, d.stride[0], d.stride[1], d.stride[2], d.stride[3]));
  const char* index = L.index64 ? "unsigned long long" : "unsigned int";
  L.spec.source = "#include <kiln/elementwise.cuh>\n";
  L.spec.expression = fmt::format("kiln::elementwise<{}, {}, {}, {}, {}, kiln::Layout<{}>, {}, {}, {}, {}>", op.functor,
                                  types[0], types[1], types[2], types[3], fmt::join(layout, ", "), vec, index, block,
                                  unroll);
  L.spec.options = {"-std=c++17"};
  const bool same = tensor_dtypes.empty() || tensor_dtypes.front() == out.dtype;
  const bool tuned = block != kDefaultBlock || unroll != kDefaultUnroll;
  L.spec.name = fmt::format("{}_{}{}__r{}v{}{}{}", op.name, dtype_list(tensor_dtypes),
                            same ? "" : fmt::format("_to_{}", name_of(out.dtype)), merged.size(), vec,
                            L.index64 ? "_i64" : "", tuned ? fmt::format("_b{}u{}", block, unroll) : "");
  L.groups = std::uint64_t(groups);
  L.block = unsigned(block);
  const std::uint64_t per_block = std::uint64_t(block) * unroll;
  L.grid = unsigned((std::uint64_t(groups) + per_block - 1) / per_block);
  for (int s = 0; s < kSlots; ++s) L.pointers[s] = views[s] ? views[s]->data : 0;
  return L;
}

}  // namespace kiln
