// The fp64 reference of a group_norm node, for reference.cpp: each sample's group of channels
// (with every spatial position) normalized by its mean and biased variance, two passes in
// fp64, then each channel's weight and bias.
#include <algorithm>
#include <cmath>

#include "engine/ir/graph_ops.hpp"
#include "ops/op.hpp"
#include "tests/engine/reference.hpp"

namespace kiln::test {

std::vector<double> group_norm_reference(const Graph& g, int id, const ValueLookup& arg,
                                         std::vector<double>* mag) {
  const Graph::Node& n = g.node(id);
  const std::vector<double>& x = arg(std::get<int>(n.args[0]));
  const double* w = n.args.size() > 1 ? arg(std::get<int>(n.args[1])).data() : nullptr;
  const double* b = n.args.size() > 2 ? arg(std::get<int>(n.args[2])).data() : nullptr;
  const Shape& s = n.shape;  // [N, C, *spatial], x's
  const std::int64_t N = s[0], C = s[1], G = n.attrs.integer("groups").value_or(1);
  const std::int64_t S = numel_of(s) / (N * C), per = C / G * S;  // a group's elements
  const double eps = ops::eps_of(n.attrs);
  std::vector<double> out(x.size());
  if (mag) mag->assign(x.size(), 0);
  for (std::int64_t i = 0; i < N * G; ++i) {
    const std::size_t first = std::size_t(i * per);  // row-major: a group is one run
    double mean = 0, var = 0, largest = 0;
    for (std::int64_t e = 0; e < per; ++e) {
      mean += x[first + std::size_t(e)];
      largest = std::max(largest, std::fabs(x[first + std::size_t(e)]));
    }
    mean /= double(per);
    for (std::int64_t e = 0; e < per; ++e) {
      const double d = x[first + std::size_t(e)] - mean;
      var += d * d;
    }
    const double rstd = 1 / std::sqrt(var / double(per) + eps);
    for (std::int64_t e = 0; e < per; ++e) {
      const std::size_t at = first + std::size_t(e);
      const std::int64_t c = (i % G) * (C / G) + e / S;
      out[at] = (x[at] - mean) * rstd * (w ? w[c] : 1) + (b ? b[c] : 0);
      if (mag) (*mag)[at] = largest;
    }
  }
  return out;
}

KILN_NODE_REFERENCE("group_norm", group_norm_reference);

}  // namespace kiln::test
