#include "field.hpp"

#include <fmt/format.h>

namespace field {

kiln::Template kernel(const std::string& dir, const std::string& name) {
  using K = kiln::TemplateParam::Kind;
  const bool grad = name != "gauss_field", of_points = name != "gauss_grad_p";
  std::vector<kiln::TemplateParam> params = {{"x", K::tensor}, {"P", K::tensor}};
  if (grad) params.push_back({"gf", K::tensor});
  params.insert(
      params.end(),
      {{"part", K::tensor}, {"B", K::i32}, {"N", K::i32}, {"S", K::i32}, {"logdiag", K::i32}});
  std::vector<std::string> shape = {"S", of_points ? "B" : "N"};
  if (name == "gauss_grad_x") shape.push_back("3");
  if (name == "gauss_grad_p") shape.push_back("10");
  // The forward's threads own kFieldPoints points each (gauss_field's POINTS).
  const bool forward = name == "gauss_field";
  const std::string points = std::to_string(forward ? kFieldPoints : 1);
  kiln::Template t = kiln::Template::from_file(dir + "/gauss.cuh");
  t.params(params)
      .instance(name + "<{x}, {BLOCK}, {logdiag}" + (forward ? ", " + points : "") + ">")
      .tunable("BLOCK", {128, 256, 64})
      .launch({of_points ? "ceilf(B / (" + points + " * BLOCK))" : "ceilf(N / BLOCK)", "S"},
              {"BLOCK"})
      .output("part", "x", shape);
  return t;
}

void declare(kiln::Graph& g, const std::string& dir) {
  for (const char* name : {"gauss_field", "gauss_grad_x", "gauss_grad_p"})
    g.define_template(name, kernel(dir, name));
}

namespace {

kiln::Value summed(kiln::Value part) { return kiln::reduce("sum", part, false, 0); }

}  // namespace

kiln::Value forward(kiln::Graph& g, kiln::Value x, kiln::Value P, std::int64_t B, std::int64_t N,
                    int logdiag) {
  const int S = slices((B + kFieldPoints - 1) / kFieldPoints, N);
  return summed(g.add("gauss_field", {x, P, double(B), double(N), double(S), double(logdiag)}));
}

kiln::Value grad_x(kiln::Graph& g, kiln::Value x, kiln::Value P, kiln::Value gf, std::int64_t B,
                   std::int64_t N, int logdiag) {
  const int S = slices(B, N);
  return summed(
      g.add("gauss_grad_x", {x, P, gf, double(B), double(N), double(S), double(logdiag)}));
}

kiln::Value grad_p(kiln::Graph& g, kiln::Value x, kiln::Value P, kiln::Value gf, std::int64_t B,
                   std::int64_t N, int logdiag) {
  const int S = slices(N, B);
  return summed(
      g.add("gauss_grad_p", {x, P, gf, double(B), double(N), double(S), double(logdiag)}));
}

double Reference::f(const double* x) const {
  double sum = 0;
  for (std::size_t n = 0; n < P.size() / kParams; ++n) {
    const double* p = &P[n * kParams];
    const double z0 = (x[0] - p[0]) / p[3];
    const double z1 = (x[1] - p[1] - p[4] * z0) / p[5];
    const double z2 = (x[2] - p[2] - p[6] * z0 - p[7] * z1) / p[8];
    sum += p[9] * std::exp(-0.5 * (z0 * z0 + z1 * z1 + z2 * z2));
  }
  return sum;
}

void Reference::grads(const double* x, double gf, double* dx, std::vector<double>* dP) const {
  dx[0] = dx[1] = dx[2] = 0;
  for (std::size_t n = 0; n < P.size() / kParams; ++n) {
    const double* p = &P[n * kParams];
    double z[3];
    z[0] = (x[0] - p[0]) / p[3];
    z[1] = (x[1] - p[1] - p[4] * z[0]) / p[5];
    z[2] = (x[2] - p[2] - p[6] * z[0] - p[7] * z[1]) / p[8];
    const double e = std::exp(-0.5 * (z[0] * z[0] + z[1] * z[1] + z[2] * z[2]));
    const double c = -gf * p[9] * e;
    double u[3];
    u[2] = c * z[2] / p[8];
    u[1] = (c * z[1] - p[7] * u[2]) / p[5];
    u[0] = (c * z[0] - p[4] * u[1] - p[6] * u[2]) / p[3];
    for (int i = 0; i < 3; ++i) dx[i] += u[i];
    if (!dP) continue;
    double* d = &(*dP)[n * kParams];
    for (int i = 0; i < 3; ++i) d[i] -= u[i];
    d[3] -= u[0] * z[0];
    d[4] -= u[1] * z[0];
    d[5] -= u[1] * z[1];
    d[6] -= u[2] * z[0];
    d[7] -= u[2] * z[1];
    d[8] -= u[2] * z[2];
    d[9] += gf * e;
  }
}

}  // namespace field
