// A convolution's geometry as conv.cuh takes it (engine/families/conv/conv.hpp).
#include <fmt/format.h>

#include <kiln/error.hpp>
#include <limits>

#include "engine/families/conv/conv.hpp"

namespace kiln {
namespace {

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

// `v`'s strides with those along extents of 1 zeroed (no element is stepped to).
Shape used_strides(const TensorView& v) {
  Shape st = v.resolved_strides();
  for (std::size_t i = 0; i < st.size(); ++i)
    if (v.shape[i] == 1) st[i] = 0;
  return st;
}

// A result-shaped slot (an output or an epilogue input broadcast to [N, K, P, Q]): its channel
// stride along N (the product's columns) and its batch dims (group, image, p, q); rows have no
// stride of their own.
GemmSlot result_slot(const TensorView& v, const ops::ConvGeometry& g) {
  const auto st = result_strides(v);
  GemmSlot s;
  s.data = v.data;
  s.element = size_of(v.dtype);
  s.col = st[1];
  s.batch = {g.k / g.groups * st[1], st[0], st[2], st[3]};
  return s;
}

// The window of x [N, C, H, W] read at output pixel rows, or of w [K, C/groups, R, S] (one
// "pixel" per output channel, its R x S taps the image).
ConvWindow window_of(const TensorView& v, const ops::ConvGeometry& g, bool weight) {
  const Shape st = used_strides(v);
  ConvWindow w;
  w.s_img = st[0], w.s_c = st[1], w.s_h = st[2], w.s_w = st[3];
  w.c_ext = int(g.c / g.groups);
  w.taps_w = int(g.s);
  if (weight) {
    w.h = int(g.r), w.w = int(g.s);
  } else {
    w.pq = int(g.p * g.q), w.q = int(g.q), w.h = int(g.h), w.w = int(g.w);
    w.stride_h = int(g.stride_h), w.stride_w = int(g.stride_w);
    w.pad_h = int(g.pad_h), w.pad_w = int(g.pad_w);
    w.dil_h = int(g.dil_h), w.dil_w = int(g.dil_w);
  }
  // 16-byte chunks: the channels contiguous, a chunk never across two taps, every pixel's and
  // group's first channel aligned.
  const std::int64_t per = 16 / std::int64_t(size_of(v.dtype));
  w.vec = (w.s_c == 1 || w.c_ext == 1) && w.c_ext % per == 0 && v.data % 16 == 0 &&
          w.s_img % per == 0 && w.s_h % per == 0 && w.s_w % per == 0;
  return w;
}

}  // namespace

std::array<std::int64_t, 4> result_strides(const TensorView& v) {
  std::array<std::int64_t, 4> st{};
  const Shape own = used_strides(v);
  for (std::size_t i = 0; i < v.shape.size() && i < 4; ++i)
    st[3 - i] = own[v.shape.size() - 1 - i];
  return st;
}

std::optional<std::int64_t> row_stride(const TensorView& v, const ops::ConvGeometry& g) {
  const auto st = result_strides(v);
  const std::int64_t rs = g.q > 1 ? st[3] : g.p > 1 ? st[2] : 0;
  if (g.p > 1 && st[2] != g.q * rs) return std::nullopt;
  return rs;
}

bool pixel_rows_fit(const ConvKernel& k) {
  const ops::ConvGeometry& g = k.geometry;
  bool ok = true;
  // The outputs' images one run of rows too (an NCHW result takes the mma.sync path, whose
  // stores along P*Q coalesce); an input may step per image alone (a time embedding).
  for (const auto& v : k.outputs) {
    const auto rs = row_stride(v, g);
    ok = ok && rs && (g.n == 1 || result_strides(v)[0] == g.p * g.q * *rs);
  }
  for (const auto& v : k.epilogue_inputs) ok = ok && row_stride(v, g).has_value();
  return ok;
}

namespace {

GemmSlot row_slot(const TensorView& v, const ops::ConvGeometry& g) {
  GemmSlot s;
  s.data = v.data;
  s.element = size_of(v.dtype);
  s.row = row_stride(v, g).value_or(0);
  s.col = result_strides(v)[1];
  s.batch[0] = g.n > 1 ? result_strides(v)[0] : 0;  // image to image
  return s;
}

}  // namespace

GemmProblem pixel_rows_problem(const ConvKernel& k, std::int64_t depth) {
  const ops::ConvGeometry& g = k.geometry;
  GemmProblem p;
  p.m = g.n * g.p * g.q, p.n = g.k, p.k = depth;
  p.batch_ext[0] = g.p * g.q;  // pixels an image: the templates split a row into the two
  p.outputs = k.outputs.size();
  for (const auto& o : k.outputs) p.slots.push_back(row_slot(o, g)), p.slots.back().hi = p.n;
  GemmSlot x, w;
  x.data = k.x.data, x.element = w.element = size_of(k.x.dtype), w.data = k.w.data;
  p.slots.push_back(x), p.slots.push_back(w);
  if (k.bias) {
    GemmSlot b;
    b.data = k.bias->data, b.element = size_of(k.bias->dtype);
    b.col = k.bias->shape[0] == 1 ? 0 : k.bias->resolved_strides()[0];
    p.slots.push_back(b);
  }
  for (const auto& v : k.epilogue_inputs) p.slots.push_back(row_slot(v, g));
  return p;
}

ConvProblem conv_problem(const ConvKernel& k, const std::string& stem) {
  const ops::ConvGeometry& g = k.geometry;
  const std::int64_t m = g.n * g.p * g.q, n = g.k / g.groups, kk = g.r * g.s * (g.c / g.groups);
  if (m > kIntMax - 512 || kk > kIntMax - 512 || g.h > kIntMax || g.w > kIntMax)
    throw ShapeError(fmt::format(
        "{}: {} output pixels (N*P*Q) and {} products per output (R*S*C/groups): each must stay "
        "below 2^31",
        stem, m, kk));
  ConvProblem cp;
  GemmProblem& p = cp.gemm;
  p.m = m, p.n = n, p.k = kk;
  p.batches = g.groups;
  p.batch_ext = {g.groups, g.n, g.p, g.q};
  p.outputs = k.outputs.size();
  for (const TensorView& o : k.outputs) {
    p.slots.push_back(result_slot(o, g));
    p.slots.back().hi = n;
  }
  cp.a = window_of(k.x, g, false);
  cp.b = window_of(k.w, g, true);
  GemmSlot a, b;
  a.data = k.x.data, a.element = size_of(k.x.dtype);
  a.batch[0] = cp.a.c_ext * cp.a.s_c;  // the group's first channel
  b.data = k.w.data, b.element = size_of(k.w.dtype);
  b.batch[0] = n * cp.b.s_img;  // the group's first output channel
  p.slots.push_back(a);
  p.slots.push_back(b);
  if (k.bias) {
    GemmSlot s;
    s.data = k.bias->data, s.element = size_of(k.bias->dtype);
    s.col = used_strides(*k.bias)[0];
    p.slots.push_back(s);
  }
  for (const TensorView& v : k.epilogue_inputs) p.slots.push_back(result_slot(v, g));
  return cp;
}

}  // namespace kiln
