// The fp64 reference of attention (ops/attention.cpp), for reference.cpp and the attention
// tests: written from the op's documented semantics, sharing nothing with the kernels.
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/ir/graph_ops.hpp"
#include "tests/engine/reference.hpp"

namespace kiln::test {

std::vector<double> attention_row(const AttentionRef& a, std::int64_t b, std::int64_t h,
                                  std::int64_t i) {
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
  const double* v = a.v->data() + (b * hkv + hk) * skv * d;
  Shape full = a.q_shape;
  full.back() = skv;
  std::vector<double> x(std::size_t(skv), -std::numeric_limits<double>::infinity());
  double top = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < keys; ++j) {
    if (a.causal && j > i + diag) continue;
    double s = 0;
    for (std::int64_t c = 0; c < d; ++c) s += q[c] * k[j * d + c];
    s *= scale;
    if (a.mask) {
      const double m = (*a.mask)[std::size_t(
          broadcast_offset(((b * hq + h) * sq + i) * skv + j, full, a.mask_shape))];
      if (a.mask_bool && m == 0) continue;
      if (!a.mask_bool) s += m;
    }
    x[std::size_t(j)] = s;
    top = std::max(top, s);
  }
  std::vector<double> out(std::size_t(d), 0.0);
  if (top == -std::numeric_limits<double>::infinity()) return out;  // every key masked: zeros
  double sum = 0;
  for (std::int64_t j = 0; j < skv; ++j) {
    const double p = std::exp(x[std::size_t(j)] - top);
    sum += p;
    for (std::int64_t c = 0; c < d && p != 0; ++c) out[std::size_t(c)] += p * v[j * d + c];
  }
  for (double& o : out) o /= sum;
  return out;
}

std::vector<double> attention_reference(const Graph& g, int id, const ValueLookup& arg,
                                        std::vector<double>* mag) {
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
  const std::size_t r = a.q_shape.size();
  const std::int64_t rows = numel_of(a.q_shape) / a.q_shape[r - 1];
  const std::int64_t hq = a.q_shape[r - 3], sq = a.q_shape[r - 2];
  std::vector<double> out;
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::vector<double> o = attention_row(a, row / sq / hq, row / sq % hq, row % sq);
    out.insert(out.end(), o.begin(), o.end());
  }
  if (mag) {  // an output is a weighted mean of v's rows: v's largest magnitude bounds it
    double top = 0;
    for (double x : *a.v) top = std::max(top, std::fabs(x));
    mag->assign(out.size(), top);
  }
  return out;
}

KILN_NODE_REFERENCE("attention", attention_reference);

}  // namespace kiln::test
