#include "engine/codegen/layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <kiln/error.hpp>

#include "engine/codegen/codegen.hpp"

namespace kiln {

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

std::string LayoutPlan::type() const {
  std::vector<std::string> parts;
  for (const Dim& d : dims)  // the outermost extent is the launch's, not the kernel's: 0
    parts.push_back(codegen::render_dim(parts.empty() ? 0 : d.extent, d.stride));
  return codegen::render_instance("kiln::Layout", parts);
}

namespace {

using Dim = LayoutPlan::Dim;

// The dims of `shape` with every slot's strides, unit dims dropped (but a row's dim, and a
// reduced axis unless every dim is reduced: the column template's [outer, R, inner] iteration
// needs it between the dims around it, which would otherwise coalesce and take a vector width
// that straddles them). `dim_reduced` gets whether each kept dim is reduced.
std::vector<Dim> kept_dims(const std::vector<const TensorView*>& views, std::size_t NO,
                           const Shape& shape, bool rows, const std::vector<bool>& reduced,
                           std::vector<bool>& dim_reduced) {
  const std::size_t K = views.size();
  std::vector<std::vector<std::int64_t>> strides;
  for (std::size_t s = 0; s < K; ++s)
    strides.push_back(broadcast_strides(*views[s], shape, s < NO ? "output" : "input"));
  const bool all_reduced =
      !reduced.empty() && std::all_of(reduced.begin(), reduced.end(), [](bool r) { return r; });
  std::vector<Dim> dims;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const bool row = rows && d + 1 == shape.size();
    const bool reduced_axis = d < reduced.size() && reduced[d] && !all_reduced;
    if (shape[d] == 1 && !row && !reduced_axis) continue;
    Dim dim{shape[d], std::vector<std::int64_t>(K)};
    const bool is_reduced = d < reduced.size() && reduced[d];
    dim_reduced.push_back(is_reduced);
    for (std::size_t s = 0; s < K; ++s) dim.stride[s] = strides[s][d];
    for (std::size_t s = 0; s < NO; ++s)
      if (dim.stride[s] == 0 && !is_reduced && dim.extent > 1)
        throw ShapeError(fmt::format("output view {} has stride 0 in dim {}: its elements overlap",
                                     views[s]->describe(), d));
    dims.push_back(dim);
  }
  return dims;
}

// Merges an inner dim into the one outside it when every slot steps through both as one
// (never the row dim, never a reduced dim with one that is not: the vector width must divide
// the dims inside the reduced ones). One dim of extent 1 when none is left.
std::vector<Dim> coalesce(const std::vector<Dim>& dims, const std::vector<bool>& dim_reduced,
                          std::size_t K, std::size_t NO, bool rows) {
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
  return merged;
}

// A 16-byte pack of the widest dtype that moves along the inner dim (an input broadcast along
// it is one load per pack, whatever its width: an embedding's i64 ids), if every tensor slot
// allows it along the inner dim.
int vector_width(const std::vector<const TensorView*>& views, std::size_t NO,
                 const std::vector<Dim>& merged, bool inner_reduced, int max_vec) {
  std::size_t widest = 1;
  for (std::size_t s = 0; s < views.size(); ++s)
    if (s < NO || merged.back().stride[s] != 0) widest = std::max(widest, size_of(views[s]->dtype));
  for (int v = std::min(int(16 / widest), max_vec); v >= 2; v /= 2) {
    const Dim& inner = merged.back();
    bool ok = inner.extent % v == 0;
    for (std::size_t s = 0; s < views.size() && ok; ++s) {
      const std::int64_t is = inner.stride[s];
      if (is == 0 && (s >= NO || inner_reduced))
        continue;  // broadcast along the inner dim: one load per pack
      ok = is == 1 && views[s]->data % (v * size_of(views[s]->dtype)) == 0;
      for (std::size_t d = 0; d + 1 < merged.size() && ok; ++d) ok = merged[d].stride[s] % v == 0;
    }
    if (ok) return v;
  }
  return 1;
}

}  // namespace

TensorView axis_last(const TensorView& v, const Shape& shape, std::size_t axis,
                      const char* role) {
  TensorView r = v;
  r.strides = broadcast_strides(v, shape, role);
  r.shape = shape;
  const auto last = [axis](auto& s) {
    std::rotate(s.begin() + std::ptrdiff_t(axis), s.begin() + std::ptrdiff_t(axis) + 1, s.end());
  };
  last(r.shape), last(r.strides);
  return r;
}

LayoutPlan plan_layout(const std::vector<const TensorView*>& views, std::size_t NO,
                       const Shape& shape, bool rows, std::int64_t slack,
                       const std::vector<bool>& reduced, int max_vec) {
  const std::size_t K = views.size();
  std::vector<bool> dim_reduced;
  std::vector<Dim> dims = kept_dims(views, NO, shape, rows, reduced, dim_reduced);
  const bool any_reduced =
      std::find(dim_reduced.begin(), dim_reduced.end(), true) != dim_reduced.end();
  // Elementwise work iterates in the first output's memory order, so that a channels_last
  // (or any permuted) result is written, and read alike, along its contiguous dim.
  if (!rows && !any_reduced && NO > 0)
    std::stable_sort(dims.begin(), dims.end(),
                     [](const Dim& a, const Dim& b) { return a.stride[0] > b.stride[0]; });
  const bool inner_reduced = !dim_reduced.empty() && dim_reduced.back();
  std::vector<Dim> merged = coalesce(dims, dim_reduced, K, NO, rows);
  const int vec = vector_width(views, NO, merged, inner_reduced, max_vec);
  merged.back().extent /= vec;
  for (auto& st : merged.back().stride) st *= vec;
  // Index width: 32-bit unless an iteration count or offset reaches 2^31.
  LayoutPlan lp;
  lp.groups = numel_of(shape) == 0 ? 0 : 1;
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

}  // namespace kiln
