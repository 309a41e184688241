// Row ops over the last axis: reductions (sum mean max min var std), softmax, log_softmax,
// layer_norm, rms_norm. fp64 references work on one row at a time.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <kiln/error.hpp>
#include <limits>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

void sum(const double* x, std::int64_t n, const double*, const double*, const Attrs&,
         double* out) {
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i) s += x[i];
  *out = s;
}
void mean(const double* x, std::int64_t n, const double* w, const double* b, const Attrs& a,
          double* out) {
  sum(x, n, w, b, a, out);
  *out /= double(n);
}
template <bool kMax>
void extreme(const double* x, std::int64_t n, const double*, const double*, const Attrs&,
             double* out) {
  double m = kMax ? -INFINITY : INFINITY;
  for (std::int64_t i = 0; i < n; ++i)
    if (std::isnan(x[i]) || (kMax ? x[i] > m : x[i] < m)) m = x[i];
  *out = m;
}
// The variance around the mean (two passes in fp64), over n - correction as torch divides
// (none left: M2 / 0, inf, or NaN for a row of one value).
template <bool kSqrt>
void variance(const double* x, std::int64_t n, const double*, const double*, const Attrs& attrs,
              double* out) {
  double mu = 0, m2 = 0;
  for (std::int64_t i = 0; i < n; ++i) mu += x[i];
  mu /= double(n);
  for (std::int64_t i = 0; i < n; ++i) m2 += (x[i] - mu) * (x[i] - mu);
  const double v = m2 / std::max(0.0, double(n) - attrs.number("correction").value_or(1.0));
  *out = kSqrt ? std::sqrt(v) : v;
}
template <bool kLog>
void softmax(const double* x, std::int64_t n, const double*, const double*, const Attrs&,
             double* out) {
  double m = -INFINITY, s = 0;
  for (std::int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  for (std::int64_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
  for (std::int64_t i = 0; i < n; ++i)
    out[i] = kLog ? x[i] - m - std::log(s) : std::exp(x[i] - m) / s;
}
void layer_norm(const double* x, std::int64_t n, const double* w, const double* b,
                const Attrs& attrs, double* out) {
  const double eps = eps_of(attrs);
  double mu = 0, var = 0;
  for (std::int64_t i = 0; i < n; ++i) mu += x[i];
  mu /= double(n);
  for (std::int64_t i = 0; i < n; ++i) var += (x[i] - mu) * (x[i] - mu);
  const double r = 1 / std::sqrt(var / double(n) + eps);
  for (std::int64_t i = 0; i < n; ++i) out[i] = (x[i] - mu) * r * (w ? w[i] : 1) + (b ? b[i] : 0);
}
void rms_norm(const double* x, std::int64_t n, const double* w, const double* b,
              const Attrs& attrs, double* out) {
  const double eps = eps_of(attrs);
  double ss = 0;
  for (std::int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double r = 1 / std::sqrt(ss / double(n) + eps);
  for (std::int64_t i = 0; i < n; ++i) out[i] = x[i] * r * (w ? w[i] : 1) + (b ? b[i] : 0);
}

// The attributes of a row op: reductions take an axis or "all"; every row op takes keepdim, as
// graph files written before the schema carry it on softmax and norms too.
std::vector<AttrSpec> row_attrs(bool reduces, bool affine) {
  std::vector<AttrSpec> a;
  if (affine)
    a.push_back({"eps", AttrType::number, AttrValue(kDefaultEps), false, {0, kInf, true},
                 "added to the variance (the mean square) before its square root"});
  a.push_back({"axis", reduces ? AttrType::axis : AttrType::integer, AttrValue(std::int64_t{-1}),
               false, {},
               reduces  ? "the axis to reduce (from the end if negative), a list of adjacent "
                          "ones ([1, 2]), or \"all\" for every one"
               : affine ? "the axis to normalize: the last one only"
                        : "the axis to work along (from the end if negative)"});
  a.push_back({"keepdim", AttrType::flag, AttrValue(false), false, {},
               reduces ? "keep the reduced axes with extent 1"
                       : "no effect (every axis is kept); taken as reductions take it"});
  return a;
}

// A reduction of an integer x: over one axis or all (the arg family's kernel), sum into i64
// (torch's).
TensorView infer_exact(const OpDef& op, const std::vector<Operand>& args, const Attrs& attrs) {
  TensorView r = infer_row(op, args, attrs);
  const auto& x = std::get<TensorView>(args[0]);
  if (!is_integer(x.dtype)) return r;
  if (!all_axes(attrs) && reduce_axes(attrs, std::int64_t(x.shape.size())).size() > 1)
    throw ShapeError(fmt::format("{}: an integer reduction takes one axis or \"all\", not a list",
                                 describe_args(op, args)));
  if (op.name == "sum") r.dtype = DType::i64;
  return r;
}

// sum, max and min also of integer x: exact (the arg family's kernel), sum into i64.
OpDef integer_too(OpDef d) {
  d.integers = true;
  d.infer = infer_exact;
  d.dtypes = d.name == "sum" ? "x a float tensor (the result's dtype), or i32/i64 (the sum is i64, "
                               "exact, wrapping as torch's)."
                             : "x a float tensor, or i32/i64 (exact); the result has its dtype.";
  return d;
}

OpDef row_op(std::string_view name, std::string_view functor, RowReference ref, bool reduces,
             bool affine, std::string_view doc) {
  OpDef d;
  d.name = name;
  d.operands = affine ? std::vector<std::string_view>{"x", "weight", "bias"}
                      : std::vector<std::string_view>{"x"};
  d.min_operands = 1;
  d.functor = functor;
  // Its producers fuse as a prologue computing x; a row op that writes the row takes its
  // consumers as an epilogue; a norm's weight and bias are side operands.
  d.fusion = {FusionKind::anchor, "rows", true, !reduces, 1};
  d.fusion.gathers = true;
  // A row op that writes the row stores its x too where it is read elsewhere; not softmax,
  // whose kernel replaces the values it holds by their exponentials (row_stats.cuh, Softmax).
  d.fusion.hands_on = !reduces && name != "softmax";
  d.infer = infer_row;
  d.row_reference = ref;
  d.reduces = reduces;
  d.attrs = row_attrs(reduces, affine);
  d.doc = doc;
  d.dtypes = affine ? "x a float tensor, the result's dtype; weight and bias float tensors of "
                      "shape [C], C the last extent of x."
                    : "x a float tensor; the result has its dtype.";
  return d;
}

// var and std: reductions with Bessel's correction (f32 statistics merged as layer_norm's).
OpDef variance_op(std::string_view name, std::string_view functor, RowReference ref,
                  std::string_view doc) {
  OpDef d = row_op(name, functor, ref, true, false, doc);
  d.attrs.push_back({"correction", AttrType::number, AttrValue(1.0), false, {0, kInf, false},
                     "subtracted from the count of elements reduced before dividing (1: the "
                     "sample variance, 0: the population's)"});
  return d;
}

}  // namespace

std::vector<OpDef> row_ops() {
  return {
      integer_too(row_op("sum", "kiln::row::Sum", sum, true, false, "The sum of x along axis.")),
      row_op("mean", "kiln::row::Mean", mean, true, false, "The mean of x along axis."),
      integer_too(row_op("max", "kiln::row::Max", extreme<true>, true, false,
                         "The largest element of x along axis; NaN if any is.")),
      integer_too(row_op("min", "kiln::row::Min", extreme<false>, true, false,
                         "The smallest element of x along axis; NaN if any is.")),
      variance_op("var", "kiln::row::Var", variance<false>,
                  "The variance of x along axis: sum((x - mean)^2) / max(0, n - correction), n "
                  "the elements reduced (torch.var)."),
      variance_op("std", "kiln::row::Std", variance<true>,
                  "The standard deviation of x along axis: the square root of var (torch.std)."),
      row_op("softmax", "kiln::row::Softmax", softmax<false>, false, false,
             "e^(x - max) / sum(e^(x - max)) along axis (a NaN, or +inf, makes the row NaN)."),
      row_op("log_softmax", "kiln::row::LogSoftmax", softmax<true>, false, false,
             "x - max - log(sum(e^(x - max))) along axis."),
      row_op("layer_norm", "kiln::row::LayerNorm", layer_norm, false, true,
             "(x - mean) / sqrt(var + eps) * weight + bias over the last axis of x (torch's "
             "layer_norm over one dim); weight and bias are optional."),
      row_op("rms_norm", "kiln::row::RmsNorm", rms_norm, false, true,
             "x / sqrt(mean(x^2) + eps) * weight + bias over the last axis of x; weight and "
             "bias are optional."),
  };
}

}  // namespace kiln::ops
