// The fp64 reference of a matrix product node (matmul, linear), for reference.cpp.
#include <cmath>

#include "engine/ir/graph_ops.hpp"
#include "tests/engine/reference.hpp"

namespace kiln::test {
namespace {

Shape batch_of(const Shape& s) {
  return Shape(s.begin(), s.end() - std::min<std::ptrdiff_t>(2, std::ptrdiff_t(s.size())));
}

}  // namespace

std::vector<double> gemm_reference(const Graph& g, int id, const ValueLookup& arg,
                                   std::vector<double>* mag) {
  const Graph::Node& n = g.node(id);
  const bool linear = n.op == "linear";
  const int ia = std::get<int>(n.args[0]), ib = std::get<int>(n.args[1]);
  const Shape& as = g.node(ia).shape;
  const Shape& bs = g.node(ib).shape;
  const std::vector<double>& a = arg(ia);
  const std::vector<double>& b = arg(ib);
  const double* bias = n.args.size() > 2 ? arg(std::get<int>(n.args[2])).data() : nullptr;
  // a as [batch.., M, K]; b as [batch.., K, N] (linear: w[N, K] read transposed).
  const std::int64_t K = as.back();
  const std::int64_t M = as.size() >= 2 ? as[as.size() - 2] : 1;
  const std::int64_t N = linear ? bs[0] : bs.size() >= 2 ? bs.back() : 1;
  const Shape abatch = batch_of(as);
  const Shape bbatch = linear ? Shape{} : bs.size() >= 2 ? batch_of(bs) : Shape{};
  const Shape obatch(n.shape.begin(),
                     n.shape.begin() + std::ptrdiff_t(std::max(abatch.size(), bbatch.size())));
  const std::int64_t batches = numel_of(obatch);
  std::vector<double> out(std::size_t(batches * M * N));
  if (mag) mag->assign(out.size(), 0);
  for (std::int64_t bi = 0; bi < batches; ++bi) {
    const double* A = a.data() + broadcast_offset(bi, obatch, abatch) * M * K;
    const double* B = b.data() + broadcast_offset(bi, obatch, bbatch) * K * N;
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t j = 0; j < N; ++j) {
        double s = bias ? bias[j] : 0, s_abs = bias ? std::fabs(bias[j]) : 0;
        for (std::int64_t k = 0; k < K; ++k) {
          const double p = A[m * K + k] * (linear ? B[j * K + k] : B[k * N + j]);
          s += p;
          s_abs += std::fabs(p);
        }
        const std::size_t at = std::size_t((bi * M + m) * N + j);
        out[at] = s;
        if (mag) (*mag)[at] = s_abs;
      }
  }
  return out;
}

KILN_NODE_REFERENCE("matmul", gemm_reference);
KILN_NODE_REFERENCE("linear", gemm_reference);

}  // namespace kiln::test
