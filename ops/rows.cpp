// Row ops over the last axis: reductions (sum mean max min), softmax, log_softmax, layer_norm,
// rms_norm. fp64 references work on one row at a time.
#include <cmath>
#include <limits>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

void sum(const double* x, std::int64_t n, const double*, const double*, double, double* out) {
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i) s += x[i];
  *out = s;
}
void mean(const double* x, std::int64_t n, const double* w, const double* b, double e,
          double* out) {
  sum(x, n, w, b, e, out);
  *out /= double(n);
}
template <bool kMax>
void extreme(const double* x, std::int64_t n, const double*, const double*, double, double* out) {
  double m = kMax ? -INFINITY : INFINITY;
  for (std::int64_t i = 0; i < n; ++i)
    if (std::isnan(x[i]) || (kMax ? x[i] > m : x[i] < m)) m = x[i];
  *out = m;
}
template <bool kLog>
void softmax(const double* x, std::int64_t n, const double*, const double*, double, double* out) {
  double m = -INFINITY, s = 0;
  for (std::int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  for (std::int64_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
  for (std::int64_t i = 0; i < n; ++i)
    out[i] = kLog ? x[i] - m - std::log(s) : std::exp(x[i] - m) / s;
}
void layer_norm(const double* x, std::int64_t n, const double* w, const double* b, double eps,
                double* out) {
  double mu = 0, var = 0;
  for (std::int64_t i = 0; i < n; ++i) mu += x[i];
  mu /= double(n);
  for (std::int64_t i = 0; i < n; ++i) var += (x[i] - mu) * (x[i] - mu);
  const double r = 1 / std::sqrt(var / double(n) + eps);
  for (std::int64_t i = 0; i < n; ++i) out[i] = (x[i] - mu) * r * (w ? w[i] : 1) + (b ? b[i] : 0);
}
void rms_norm(const double* x, std::int64_t n, const double* w, const double* b, double eps,
              double* out) {
  double ss = 0;
  for (std::int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const double r = 1 / std::sqrt(ss / double(n) + eps);
  for (std::int64_t i = 0; i < n; ++i) out[i] = x[i] * r * (w ? w[i] : 1) + (b ? b[i] : 0);
}

OpDef row_op(std::string_view name, std::string_view functor, RowReference ref, bool reduces,
             bool affine) {
  OpDef d;
  d.name = name;
  d.operands = affine ? std::vector<std::string_view>{"x", "weight", "bias"}
                      : std::vector<std::string_view>{"x"};
  d.min_operands = 1;
  d.functor = functor;
  d.fusion = FusionClass::row;
  d.row_reference = ref;
  d.reduces = reduces;
  return d;
}

}  // namespace

std::vector<OpDef> row_ops() {
  return {
      row_op("sum", "kiln::row::Sum", sum, true, false),
      row_op("mean", "kiln::row::Mean", mean, true, false),
      row_op("max", "kiln::row::Max", extreme<true>, true, false),
      row_op("min", "kiln::row::Min", extreme<false>, true, false),
      row_op("softmax", "kiln::row::Softmax", softmax<false>, false, false),
      row_op("log_softmax", "kiln::row::LogSoftmax", softmax<true>, false, false),
      row_op("layer_norm", "kiln::row::LayerNorm", layer_norm, false, true),
      row_op("rms_norm", "kiln::row::RmsNorm", rms_norm, false, true),
  };
}

}  // namespace kiln::ops
