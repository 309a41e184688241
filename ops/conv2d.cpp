// conv2d: a 2-d convolution with torch.nn.functional.conv2d's semantics (stride, padding,
// dilation, groups, an optional bias), computed by the convolution family (engine/families/conv)
// as an implicit GEMM with its elementwise consumers fused as the epilogue. Its fp64 reference is
// the tests' (tests/engine/reference_conv.cpp).
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "ops/conv2d.hpp"
#include "ops/op.hpp"

namespace kiln::ops {

ConvGeometry conv_geometry(const Shape& x, const Shape& w, const Attrs& attrs) {
  ConvGeometry g;
  g.n = x[0], g.c = x[1], g.h = x[2], g.w = x[3];
  g.k = w[0], g.r = w[2], g.s = w[3];
  g.groups = attrs.integer("groups").value_or(1);
  // One value stands for both dims; two are (along H, along W), as torch takes them.
  auto pair = [&](std::string_view name, std::int64_t fallback, std::int64_t& a, std::int64_t& b) {
    const auto v = attrs.extents(name).value_or(std::vector<std::int64_t>{fallback});
    a = v.at(0), b = v.size() > 1 ? v[1] : v[0];
  };
  pair("stride", 1, g.stride_h, g.stride_w);
  pair("padding", 0, g.pad_h, g.pad_w);
  pair("dilation", 1, g.dil_h, g.dil_w);
  // torch's floor division: a filter wider than the padded input gives no output, where C++'s
  // truncation toward zero would give one at stride 2 and more.
  auto outputs = [](std::int64_t size, std::int64_t pad, std::int64_t dil, std::int64_t taps,
                    std::int64_t stride) {
    const std::int64_t span = size + 2 * pad - dil * (taps - 1) - 1;
    return span < 0 ? 0 : span / stride + 1;
  };
  g.p = outputs(g.h, g.pad_h, g.dil_h, g.r, g.stride_h);
  g.q = outputs(g.w, g.pad_w, g.dil_w, g.s, g.stride_w);
  return g;
}

namespace {

void check_pairs(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  for (const auto& [name, lo] : {std::pair<std::string_view, std::int64_t>{"stride", 1},
                                 {"padding", 0},
                                 {"dilation", 1}}) {
    const auto v = attrs.extents(name);
    if (!v) continue;
    if (v->empty() || v->size() > 2)
      throw ArgumentError(fmt::format("{}: {} takes one value (both dims) or two (H, W), got {}",
                                      describe_args(op, args), name, v->size()));
    for (std::int64_t e : *v)
      if (e < lo || e > (std::int64_t(1) << 20))
        throw ArgumentError(fmt::format("{}: {} {} is outside {} to 2^20",
                                        describe_args(op, args), name, e, lo));
  }
}

TensorView infer_conv2d(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  const TensorView &x = tensor_operand(op, args, 0), &w = tensor_operand(op, args, 1);
  const std::string call = describe_args(op, args);
  if (x.shape.size() != 4 || w.shape.size() != 4)
    throw ShapeError(fmt::format("{}: x must be [N, C, H, W] and w [K, C/groups, R, S]; got x of "
                                 "rank {} and w of rank {}",
                                 call, x.shape.size(), w.shape.size()));
  for (std::size_t i = 0; i < args.size(); ++i) {
    const DType t = tensor_operand(op, args, i).dtype;
    if (!is_float(t))
      throw DtypeError(fmt::format("{}: {} is {}; cast it to a float dtype first", call,
                                   op.operands[i], name_of(t)));
    if (t != x.dtype)
      throw DtypeError(fmt::format("{}: x is {} and {} is {}; cast one so that they match", call,
                                   name_of(x.dtype), op.operands[i], name_of(t)));
  }
  check_pairs(op, args, attrs);
  const ConvGeometry g = conv_geometry(x.shape, w.shape, attrs);
  if (g.groups < 1 || g.c % g.groups || g.k % g.groups)
    throw ShapeError(fmt::format("{}: groups {} must divide x's {} channels and w's {} outputs",
                                 call, g.groups, g.c, g.k));
  if (w.shape[1] * g.groups != g.c)
    throw ShapeError(fmt::format("{}: w has {} input channels per group; x's {} channels in {} "
                                 "groups need {}",
                                 call, w.shape[1], g.c, g.groups, g.c / g.groups));
  if (args.size() > 2 && tensor_operand(op, args, 2).shape != Shape{g.k})
    throw ShapeError(fmt::format("{}: bias must be [{}] (w's K), got {}", call, g.k,
                                 to_string(tensor_operand(op, args, 2).shape)));
  if (g.n < 1 || g.c < 1 || g.k < 1 || g.r < 1 || g.s < 1 || g.p < 1 || g.q < 1)
    throw ShapeError(fmt::format(
        "{}: an empty convolution: N {}, C {}, K {}, a {}x{} filter over {}x{} with padding "
        "{}x{}, dilation {}x{} and stride {}x{} gives a {}x{} output",
        call, g.n, g.c, g.k, g.r, g.s, g.h, g.w, g.pad_h, g.pad_w, g.dil_h, g.dil_w, g.stride_h,
        g.stride_w, std::max<std::int64_t>(g.p, 0), std::max<std::int64_t>(g.q, 0)));
  TensorView r;
  r.dtype = x.dtype;
  r.shape = {g.n, g.k, g.p, g.q};
  return r;
}

}  // namespace

std::vector<OpDef> conv_ops() {
  OpDef d;
  d.name = "conv2d";
  d.operands = {"x", "w", "bias"};
  d.min_operands = 2;
  // x and w read from memory as the views they are, the bias as a side operand; elementwise
  // consumers fuse as the epilogue.
  d.fusion = {FusionKind::anchor, "conv", false, true, 2};
  d.infer = infer_conv2d;
  d.memory_order = keeps_channels_last;  // channels_last in, channels_last out
  d.domain = {-1, 1};
  const AttrRange from1{1, double(std::int64_t(1) << 20)};
  d.attrs = {
      {"stride", AttrType::extents, std::nullopt, false, {},
       "the window's step: [both] or [along H, along W]; 1 when absent"},
      {"padding", AttrType::extents, std::nullopt, false, {},
       "zeros around x: [both] or [along H, along W] on each side; 0 when absent"},
      {"dilation", AttrType::extents, std::nullopt, false, {},
       "the filter taps' spacing: [both] or [along H, along W]; 1 when absent"},
      {"groups", AttrType::integer, AttrValue(std::int64_t(1)), false, from1,
       "channel groups: x's C and w's K split into this many, each convolved with its own"},
      {"exact", AttrType::flag, AttrValue(false), false, {},
       "f32 to about 1e-5 (three TF32 products per term); by default f32 runs on TF32 (about "
       "1e-3), as torch's conv2d does with torch.backends.cudnn.allow_tf32 on"},
  };
  d.doc =
      "x [N, C, H, W] convolved with w [K, C/groups, R, S], plus bias [K] (optional): "
      "torch.nn.functional.conv2d, the result [N, K, P, Q] with P = floor((H + 2*pad_h - "
      "dil_h*(R-1) - 1) / stride_h) + 1 (Q alike). Any strides; channels_last memory (C "
      "contiguous, what x.to(memory_format=torch.channels_last) holds) for x and w is the fast "
      "path, read as an implicit GEMM with no copy; the result then is channels_last too (as "
      "torch's), and so are the elementwise results after it. An empty result is a ShapeError "
      "naming the sizes.";
  d.dtypes =
      "x, w and bias of one float dtype, the result's; f16 and bf16 on tensor cores with f32 "
      "accumulation; f32 on TF32 unless exact.";
  return {d};
}

}  // namespace kiln::ops
