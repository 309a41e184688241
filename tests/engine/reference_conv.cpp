// The fp64 reference of conv2d, written from torch.nn.functional.conv2d's definition: out[n, k,
// p, q] = bias[k] + sum over c of k's group, r, s of x[n, c, p*stride_h - pad_h + r*dil_h,
// q*stride_w - pad_w + s*dil_w] * w[k, c - the group's first, r, s], x zero outside.
#include <cmath>

#include "engine/ir/graph_ops.hpp"
#include "tests/engine/reference.hpp"

namespace kiln::test {
namespace {

// The attr `name` as (along H, along W); one value stands for both.
std::pair<std::int64_t, std::int64_t> pair_attr(const Graph::Node& n, const char* name,
                                                std::int64_t fallback) {
  const auto v = n.attrs.extents(name).value_or(std::vector<std::int64_t>{fallback});
  return {v[0], v.size() > 1 ? v[1] : v[0]};
}

std::vector<double> conv2d_reference(const Graph& g, int id, const ValueLookup& arg,
                                     std::vector<double>* mag) {
  const Graph::Node& n = g.node(id);
  const int ix = std::get<int>(n.args[0]), iw = std::get<int>(n.args[1]);
  const Shape &xs = g.node(ix).shape, &ws = g.node(iw).shape, &os = n.shape;
  const std::vector<double>&x = arg(ix), &w = arg(iw);
  const double* bias = n.args.size() > 2 ? arg(std::get<int>(n.args[2])).data() : nullptr;
  const auto [sh, sw] = pair_attr(n, "stride", 1);
  const auto [ph, pw] = pair_attr(n, "padding", 0);
  const auto [dh, dw] = pair_attr(n, "dilation", 1);
  const std::int64_t groups = n.attrs.integer("groups").value_or(1);
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const std::int64_t K = ws[0], Cg = ws[1], R = ws[2], S = ws[3], P = os[2], Q = os[3];
  const std::int64_t Kg = K / groups;
  std::vector<double> out(std::size_t(N * K * P * Q));
  if (mag) mag->assign(out.size(), 0);
  for (std::int64_t b = 0; b < N; ++b)
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t p = 0; p < P; ++p)
        for (std::int64_t q = 0; q < Q; ++q) {
          double s = bias ? bias[k] : 0, s_abs = bias ? std::fabs(bias[k]) : 0;
          for (std::int64_t c = 0; c < Cg; ++c)
            for (std::int64_t r = 0; r < R; ++r)
              for (std::int64_t t = 0; t < S; ++t) {
                const std::int64_t y = p * sh - ph + r * dh, z = q * sw - pw + t * dw;
                if (y < 0 || y >= H || z < 0 || z >= W) continue;
                const std::int64_t xc = k / Kg * Cg + c;
                const double v =
                    x[std::size_t(((b * C + xc) * H + y) * W + z)] *
                    w[std::size_t(((k * Cg + c) * R + r) * S + t)];
                s += v;
                s_abs += std::fabs(v);
              }
          const std::size_t at = std::size_t(((b * K + k) * P + p) * Q + q);
          out[at] = s;
          if (mag) (*mag)[at] = s_abs;
        }
  return out;
}

}  // namespace

KILN_NODE_REFERENCE("conv2d", conv2d_reference);

}  // namespace kiln::test
