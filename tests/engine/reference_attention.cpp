// The fp64 reference of attention (ops/attention.cpp), for reference.cpp and the attention
// tests: written from the op's documented semantics, sharing nothing with the kernels.
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/ir/graph_ops.hpp"
#include "tests/engine/reference.hpp"

namespace kiln::test {

namespace {

constexpr double kNone = -std::numeric_limits<double>::infinity();

// Row (b, h, i)'s scaled and masked scores (-inf for the keys it does not see), their max into
// `top`, and into `bound` the largest scale * sum |q_c k_c| + |mask| of a key it sees: what the
// f32 error of a score scales with.
std::vector<double> row_scores(const AttentionRef& a, std::int64_t b, std::int64_t h,
                               std::int64_t i, double& top, double& bound) {
  const std::size_t r = a.q_shape.size();
  const std::int64_t hq = a.q_shape[r - 3], sq = a.q_shape[r - 2], d = a.q_shape[r - 1];
  const std::int64_t hkv = a.kv_shape[r - 3], skv = a.kv_shape[r - 2];
  const std::int64_t hk = h / (hq / hkv);
  std::int64_t keys = skv;
  if (a.lens) keys = std::clamp<std::int64_t>(std::int64_t((*a.lens)[std::size_t(b)]), 0, skv);
  const std::int64_t diag = a.bottom_right ? keys - sq : 0;
  const double scale = a.scale ? *a.scale : 1.0 / std::sqrt(double(d));
  const double* q = a.q->data() + ((b * hq + h) * sq + i) * d;
  const double* k = a.k->data() + (b * hkv + hk) * skv * d;
  Shape full = a.q_shape;
  full.back() = skv;
  std::vector<double> x(std::size_t(skv), kNone);
  top = kNone, bound = 0;
  for (std::int64_t j = 0; j < keys; ++j) {
    if (a.causal && j > i + diag) continue;
    double s = 0, size = 0;
    for (std::int64_t c = 0; c < d; ++c) {
      s += q[c] * k[j * d + c];
      size += std::fabs(q[c] * k[j * d + c]);
    }
    s *= scale;
    size *= std::fabs(scale);
    if (a.mask) {
      const double m = (*a.mask)[std::size_t(
          broadcast_offset(((b * hq + h) * sq + i) * skv + j, full, a.mask_shape))];
      if (a.mask_bool && m == 0) continue;
      if (!a.mask_bool) s += m, size += std::isfinite(m) ? std::fabs(m) : 0.0;
    }
    x[std::size_t(j)] = s;
    top = std::max(top, s);
    bound = std::max(bound, size);
  }
  return x;
}

}  // namespace

std::vector<double> attention_row(const AttentionRef& a, std::int64_t b, std::int64_t h,
                                  std::int64_t i) {
  const std::size_t r = a.q_shape.size();
  const std::int64_t hq = a.q_shape[r - 3], d = a.q_shape[r - 1];
  const std::int64_t hkv = a.kv_shape[r - 3], skv = a.kv_shape[r - 2];
  const double* v = a.v->data() + (b * hkv + h / (hq / hkv)) * skv * d;
  double top, bound;
  const std::vector<double> x = row_scores(a, b, h, i, top, bound);
  std::vector<double> out(std::size_t(d), 0.0);
  if (top == kNone) return out;  // every key masked: zeros
  double sum = 0;
  for (std::int64_t j = 0; j < skv; ++j) {
    const double p = std::exp(x[std::size_t(j)] - top);
    sum += p;
    for (std::int64_t c = 0; c < d && p != 0; ++c) out[std::size_t(c)] += p * v[j * d + c];
  }
  for (double& o : out) o /= sum;
  return out;
}

double attention_lse_row(const AttentionRef& a, std::int64_t b, std::int64_t h, std::int64_t i,
                         double* bound) {
  double top, size;
  const std::vector<double> x = row_scores(a, b, h, i, top, size);
  if (bound) *bound = size;
  if (top == kNone) return kNone;  // the log of an empty sum
  double sum = 0;
  for (double s : x) sum += std::exp(s - top);
  return top + std::log(sum);
}

AttentionRef attention_ref(const Graph& g, int id, const ValueLookup& arg) {
  const Graph::Node& n = g.node(id);
  AttentionRef a;
  const int q = std::get<int>(n.args[0]), k = std::get<int>(n.args[1]);
  a.q_shape = g.node(q).shape;
  a.kv_shape = g.node(k).shape;
  a.q = &arg(q), a.k = &arg(k), a.v = &arg(std::get<int>(n.args[2]));
  for (std::size_t i = 3; i < n.args.size(); ++i) {
    const int t = std::get<int>(n.args[i]);
    if (is_integer(g.node(t).dtype)) {
      a.lens = &arg(t);
    } else {
      a.mask = &arg(t);
      a.mask_shape = g.node(t).shape;
      a.mask_bool = g.node(t).dtype == DType::boolean;
    }
  }
  a.causal = n.attrs.flag("causal");
  const AttrValue* align = n.attrs.find("causal_align");
  a.bottom_right = align && std::get<std::string>(*align) == "bottom_right";
  a.scale = n.attrs.number("scale");
  return a;
}

namespace {

// f(b, h, i) for each query row of `a`, in row-major order.
template <class F>
void each_row(const AttentionRef& a, F f) {
  const std::size_t r = a.q_shape.size();
  const std::int64_t rows = numel_of(a.q_shape) / a.q_shape[r - 1];
  const std::int64_t hq = a.q_shape[r - 3], sq = a.q_shape[r - 2];
  for (std::int64_t row = 0; row < rows; ++row) f(row / sq / hq, row / sq % hq, row % sq);
}

std::vector<double> attention_reference(const Graph& g, int id, const ValueLookup& arg,
                                        std::vector<double>* mag) {
  const AttentionRef a = attention_ref(g, id, arg);
  std::vector<double> out;
  each_row(a, [&](std::int64_t b, std::int64_t h, std::int64_t i) {
    const std::vector<double> o = attention_row(a, b, h, i);
    out.insert(out.end(), o.begin(), o.end());
  });
  if (mag) {  // an output is a weighted mean of v's rows: v's largest magnitude bounds it
    double top = 0;
    for (double x : *a.v) top = std::max(top, std::fabs(x));
    mag->assign(out.size(), top);
  }
  return out;
}

// The rows' log-sum-exp; `mag` gets each row's largest score bound (row_scores).
std::vector<double> attention_lse_reference(const Graph& g, int id, const ValueLookup& arg,
                                            std::vector<double>* mag) {
  const AttentionRef a = attention_ref(g, id, arg);
  std::vector<double> out;
  if (mag) mag->clear();
  each_row(a, [&](std::int64_t b, std::int64_t h, std::int64_t i) {
    double bound = 0;
    out.push_back(attention_lse_row(a, b, h, i, &bound));
    if (mag) mag->push_back(bound);
  });
  return out;
}

}  // namespace

KILN_NODE_REFERENCE("attention", attention_reference);
KILN_NODE_REFERENCE("attention_lse", attention_lse_reference);

}  // namespace kiln::test
