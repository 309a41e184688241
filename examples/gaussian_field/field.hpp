// The Gaussian field's kiln side (gauss.cuh's templates as graph nodes) and its fp64 reference.
#pragma once

#include <cmath>
#include <kiln/kiln.hpp>
#include <string>
#include <vector>

namespace field {

/// Gaussian n of P [N, 10]: mu (3), L00, L10, L11, L20, L21, L22, w.
constexpr int kParams = 10;

/// gauss.cuh's kernels: "gauss_field" (partials of f), "gauss_grad_x", "gauss_grad_p".
kiln::Template kernel(const std::string& dir, const std::string& name);

/// Points a thread of the forward kernel owns: each Gaussian it reads serves them all.
constexpr int kFieldPoints = 2;

/// Slices of the other side for `rows` owned rows (of threads): enough blocks to fill the GPU,
/// each slice at least 64 long.
inline int slices(std::int64_t rows, std::int64_t other) {
  const std::int64_t blocks = (rows + 127) / 128;
  const std::int64_t s = (2048 + blocks - 1) / blocks;
  return int(std::max<std::int64_t>(1, std::min(s, other / 64)));
}

/// Nodes of `g`: the field f [B] at points x [B, 3] of Gaussians P [N, 10] (`logdiag`: P holds
/// the log of L's diagonal).
kiln::Value forward(kiln::Graph& g, kiln::Value x, kiln::Value P, std::int64_t B, std::int64_t N,
                    int logdiag);
/// dx [B, 3] and dP [N, 10] given gf = dloss/df [B].
kiln::Value grad_x(kiln::Graph& g, kiln::Value x, kiln::Value P, kiln::Value gf, std::int64_t B,
                   std::int64_t N, int logdiag);
kiln::Value grad_p(kiln::Graph& g, kiln::Value x, kiln::Value P, kiln::Value gf, std::int64_t B,
                   std::int64_t N, int logdiag);
/// Declares the three templates in `g` (before the nodes above).
void declare(kiln::Graph& g, const std::string& dir);

/// fp64 reference: f at point b, and (given gf_b) its contributions to dx_b and to dP.
struct Reference {
  const std::vector<double>& P;  ///< L itself on the diagonal
  double f(const double* x) const;
  void grads(const double* x, double gf, double* dx, std::vector<double>* dP) const;
};

}  // namespace field
