#include "engine/elementwise.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <kiln/error.hpp>

namespace kiln {
namespace {

constexpr int kDefaultBlock = ElementwiseTunables::kDefaultBlock;
constexpr int kDefaultUnroll = ElementwiseTunables::kDefaultUnroll;

// Strides of `v` broadcast to `shape` (right-aligned); ShapeError if it does not broadcast.
std::vector<std::int64_t> broadcast_strides(const TensorView& v, const Shape& shape,
                                            const char* role) {
  const Shape vs = v.resolved_strides();
  if (vs.size() != v.shape.size())
    throw ShapeError(fmt::format("{} view {} has {} strides for {} dims", role, v.describe(),
                                 vs.size(), v.shape.size()));
  if (v.shape.size() > shape.size())
    throw ShapeError(fmt::format("{} view {} has more dims than the result {}", role, v.describe(),
                                 to_string(shape)));
  std::vector<std::int64_t> out(shape.size(), 0);
  const std::size_t lead = shape.size() - v.shape.size();
  for (std::size_t i = 0; i < v.shape.size(); ++i) {
    if (vs[i] < 0)
      throw ShapeError(fmt::format(
          "{} view {} has a negative stride; kiln needs non-negative strides", role, v.describe()));
    if (v.shape[i] == shape[lead + i])
      out[lead + i] = v.shape[i] == 1 ? 0 : vs[i];
    else if (v.shape[i] != 1)
      throw ShapeError(
          fmt::format("{} view {} does not broadcast to {}", role, v.describe(), to_string(shape)));
  }
  return out;
}

std::string dtype_list(const std::vector<TensorView>& views) {
  std::vector<std::string_view> names;
  for (const TensorView& v : views) names.push_back(name_of(v.dtype));
  return fmt::format("{}", fmt::join(names, "_"));
}

}  // namespace

std::string LayoutPlan::type() const {
  std::vector<std::string> parts;
  for (const Dim& d : dims)  // the outermost extent is the launch's, not the kernel's: 0
    parts.push_back(
        fmt::format("kiln::Dim<{}, {}>", parts.empty() ? 0 : d.extent, fmt::join(d.stride, ", ")));
  return fmt::format("kiln::Layout<{}>", fmt::join(parts, ", "));
}

LayoutPlan plan_layout(const std::vector<const TensorView*>& views, std::size_t NO,
                       const Shape& shape, bool rows, std::int64_t slack,
                       const std::vector<bool>& reduced) {
  using Dim = LayoutPlan::Dim;
  const std::size_t K = views.size();
  const std::int64_t numel = numel_of(shape);
  // Per-dim strides of every slot, unit dims dropped (but a row's dim stays).
  std::vector<std::vector<std::int64_t>> strides;
  for (std::size_t s = 0; s < K; ++s)
    strides.push_back(broadcast_strides(*views[s], shape, s < NO ? "output" : "input"));
  std::vector<Dim> dims;
  std::vector<bool> dim_reduced;
  bool inner_reduced = false;  // of the innermost dim kept
  // A reduced axis of extent 1 stays a dim of its own (unless every dim is reduced): the
  // column template's [outer, R, inner] iteration needs it between the dims around it, which
  // would otherwise coalesce and take a vector width that straddles them.
  const bool all_reduced =
      !reduced.empty() && std::all_of(reduced.begin(), reduced.end(), [](bool r) { return r; });
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const bool row = rows && d + 1 == shape.size();
    const bool reduced_axis = d < reduced.size() && reduced[d] && !all_reduced;
    if (shape[d] == 1 && !row && !reduced_axis) continue;
    Dim dim{shape[d], std::vector<std::int64_t>(K)};
    inner_reduced = d < reduced.size() && reduced[d];
    dim_reduced.push_back(inner_reduced);
    for (std::size_t s = 0; s < K; ++s) dim.stride[s] = strides[s][d];
    for (std::size_t s = 0; s < NO; ++s)
      if (dim.stride[s] == 0 && !inner_reduced && dim.extent > 1)
        throw ShapeError(fmt::format("output view {} has stride 0 in dim {}: its elements overlap",
                                     views[s]->describe(), d));
    dims.push_back(dim);
  }
  // Coalesce: merge an inner dim into the one outside it when every slot steps through both
  // as one (never the row dim, never a reduced dim with one that is not: the vector width
  // must divide the dims inside the reduced ones).
  std::vector<Dim> merged;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const Dim& dim = dims[i];
    const bool row = rows && i + 1 == dims.size();
    if (!merged.empty() && !row && dim_reduced[i] == dim_reduced[i - 1]) {
      Dim& outer = merged.back();  // `merged` is outermost first; `dim` is inner to it
      bool ok = true;
      for (std::size_t s = 0; s < K; ++s) ok = ok && outer.stride[s] == dim.stride[s] * dim.extent;
      if (ok) {
        outer.extent *= dim.extent;
        outer.stride = dim.stride;
        continue;
      }
    }
    merged.push_back(dim);
  }
  if (merged.empty()) {
    Dim one{1, std::vector<std::int64_t>(K, 0)};
    for (std::size_t s = 0; s < NO; ++s) one.stride[s] = 1;
    merged.push_back(one);
  }
  // Vector width: a 16-byte pack of the widest dtype, if every tensor slot allows it.
  std::size_t widest = 1;
  for (const TensorView* v : views) widest = std::max(widest, size_of(v->dtype));
  int vec = 1;
  for (int v = int(16 / widest); v >= 2 && vec == 1; v /= 2) {
    const Dim& inner = merged.back();
    bool ok = inner.extent % v == 0;
    for (std::size_t s = 0; s < K && ok; ++s) {
      const std::int64_t is = inner.stride[s];
      if (is == 0 && (s >= NO || inner_reduced))
        continue;  // broadcast along the inner dim: one load per pack
      ok = is == 1 && views[s]->data % (v * size_of(views[s]->dtype)) == 0;
      for (std::size_t d = 0; d + 1 < merged.size() && ok; ++d) ok = merged[d].stride[s] % v == 0;
    }
    if (ok) vec = v;
  }
  merged.back().extent /= vec;
  for (auto& st : merged.back().stride) st *= vec;
  // Index width: 32-bit unless an iteration count or offset reaches 2^31.
  LayoutPlan lp;
  lp.groups = numel == 0 ? 0 : 1;
  std::vector<std::int64_t> max_offset(K, 0);
  for (const Dim& d : merged) {
    lp.groups *= d.extent;
    for (std::size_t s = 0; s < K; ++s) max_offset[s] += (d.extent - 1) * d.stride[s];
  }
  lp.index64 = lp.groups + slack >= (1ll << 31);
  for (std::size_t s = 0; s < K; ++s) lp.index64 = lp.index64 || max_offset[s] + vec >= (1ll << 31);
  lp.dims = std::move(merged);
  lp.vec = vec;
  return lp;
}

std::vector<unsigned char> KernelLaunch::args() const {
  const std::size_t floats = std::max<std::size_t>(scalars.size(), 1);
  std::vector<unsigned char> bytes((pointers.size() * 8 + floats * 4 + 7) / 8 * 8, 0);
  std::memcpy(bytes.data(), pointers.data(), pointers.size() * 8);
  if (!scalars.empty())
    std::memcpy(bytes.data() + pointers.size() * 8, scalars.data(), scalars.size() * 4);
  return bytes;
}

LaunchParams::LaunchParams(const KernelLaunch& L)
    : args_(L.args()), index32_(unsigned(L.index_arg)), index64_(L.index_arg) {
  ptrs_[0] = args_.data();
  ptrs_[1] = L.index64 ? static_cast<void*>(&index64_) : &index32_;
}

std::vector<unsigned char> LaunchParams::bytes() const {
  std::vector<unsigned char> b = args_;
  const auto* index = static_cast<const unsigned char*>(ptrs_[1]);
  b.insert(b.end(), index, index + (ptrs_[1] == &index64_ ? sizeof index64_ : sizeof index32_));
  return b;
}

ElementwiseTunables elementwise_tunables(const Tunables& t, const std::string& stem) {
  ElementwiseTunables e;
  for (const auto& [name, value] : t) {
    if (name == "block")
      e.block = value;
    else if (name == "unroll")
      e.unroll = value;
    else
      throw ArgumentError(fmt::format(
          "{}: '{}' is not a tunable of the elementwise template (block, unroll)", stem, name));
  }
  return e;
}

KernelLaunch specialize_elementwise(const codegen::Body& body, const std::string& stem,
                                    const std::vector<TensorView>& outputs,
                                    const std::vector<TensorView>& inputs,
                                    std::vector<float> scalars, ElementwiseTunables tunables) {
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
  const LayoutPlan lp = plan_layout(views, outputs.size(), shape, false, block * unroll);
  KernelLaunch L;
  L.index64 = lp.index64;
  const int vec = lp.vec;
  const std::int64_t groups = lp.groups;
  L.spec.source = "#include <kiln/elementwise.cuh>\n\n" + codegen::render_body(body);
  L.spec.expression =
      fmt::format("kiln::elementwise<kiln_body, {}, {}, {}, {}, {}>", lp.type(), vec,
                  L.index64 ? "unsigned long long" : "unsigned int", block, unroll);
  L.spec.options = codegen::builtin_options();
  const bool tuned = block != kDefaultBlock || unroll != kDefaultUnroll;
  L.spec.name = fmt::format("{}__r{}v{}{}{}", stem, lp.dims.size(), vec, L.index64 ? "_i64" : "",
                            tuned ? fmt::format("_b{}u{}", block, unroll) : "");
  L.vec = vec;
  L.groups = std::uint64_t(groups);
  L.index_arg = L.groups;
  L.block = unsigned(block);
  L.tunables = {{"block", block}, {"unroll", unroll}};
  const std::uint64_t per_block = std::uint64_t(block) * unroll;
  L.grid = unsigned((std::uint64_t(groups) + per_block - 1) / per_block);
  for (const TensorView* v : views) L.pointers.push_back(v->data);
  L.scalars = std::move(scalars);
  return L;
}

codegen::Body op_body(const ops::OpDef& op, DType out, const std::vector<Operand>& operands) {
  codegen::Body b;
  b.outputs = {out};
  codegen::Step step{std::string(op.functor), {}, op.rule == ops::Rule::cast, out};
  for (const Operand& a : operands) {
    if (auto* v = std::get_if<TensorView>(&a)) {
      step.args.push_back({codegen::Ref::Kind::input, int(b.inputs.size())});
      b.inputs.push_back(v->dtype);
    } else {
      step.args.push_back({codegen::Ref::Kind::scalar, b.scalars++});
    }
  }
  step.round = false;  // the store rounds the one output anyway
  b.steps.push_back(step);
  b.results = {{codegen::Ref::Kind::step, 0}};
  return b;
}

KernelLaunch specialize_op(const ops::OpDef& op, const TensorView& out,
                           const std::vector<Operand>& operands, ElementwiseTunables tunables) {
  std::vector<TensorView> inputs;
  std::vector<float> scalars;
  for (const Operand& a : operands) {
    if (auto* v = std::get_if<TensorView>(&a))
      inputs.push_back(*v);
    else
      scalars.push_back(float(std::get<double>(a)));
  }
  const bool same = inputs.empty() || inputs.front().dtype == out.dtype;
  const std::string stem = fmt::format("{}_{}{}", op.name, dtype_list(inputs),
                                       same ? "" : fmt::format("_to_{}", name_of(out.dtype)));
  return specialize_elementwise(op_body(op, out.dtype, operands), stem, {out}, inputs,
                                std::move(scalars), tunables);
}

}  // namespace kiln
