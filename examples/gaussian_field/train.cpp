// Training a Gaussian field with Adam on kiln: MSE against a target field at fixed points, the
// parameters P [N, 10] with the log of L's diagonal (so it stays positive). One iteration is one
// plan (forward, loss, backward, the Adam update) replayed, its state in ping-pong tensors.
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <random>

#include "field.hpp"

namespace train {
namespace {

using kiln::DType;

constexpr std::int64_t kPoints = 1000;
constexpr int kIterations = 500;
constexpr double kLr = 0.02, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

}  // namespace

// One Adam iteration: loss of P, and P, m, v after the update; k1 = lr / (1 - beta1^t) and
// k2 = 1 / (1 - beta2^t) are [1] inputs (a new t needs no new kernel).
kiln::Graph step_graph(const std::string& dir, std::int64_t N) {
  kiln::Graph g;
  field::declare(g, dir);
  const kiln::Shape ps = {N, field::kParams};
  auto x = g.input("x", {kPoints, 3}, DType::f32), t = g.input("t", {kPoints}, DType::f32);
  auto P = g.input("P", ps, DType::f32), m = g.input("m", ps, DType::f32),
       v = g.input("v", ps, DType::f32);
  auto k1 = g.input("k1", {1}, DType::f32), k2 = g.input("k2", {1}, DType::f32);
  auto r = field::forward(g, x, P, kPoints, N, 1) - t;
  g.output(kiln::reduce_all("mean", r * r), "loss");
  auto dP = field::grad_p(g, x, P, r * (2.0 / kPoints), kPoints, N, 1);
  auto m2 = kBeta1 * m + (1 - kBeta1) * dP;
  auto v2 = kBeta2 * v + (1 - kBeta2) * (dP * dP);
  g.output(m2, "m_out");
  g.output(v2, "v_out");
  g.output(P - k1 * m2 / (kiln::sqrt(k2 * v2) + kEps), "P_out");
  return g;
}

namespace {

void write(const std::string& path, const std::vector<float>& v) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * 4));
}

struct Problem {
  std::vector<float> x, t, P;
};

// Points in [-2, 2]^3; the target: a random field of N Gaussians (fp64); the start: another.
Problem problem(std::int64_t N) {
  std::mt19937_64 rng(5 + std::uint64_t(N));
  std::uniform_real_distribution<double> u(-1, 1);
  const auto gaussians = [&](bool logdiag) {
    std::vector<double> P;
    for (std::int64_t n = 0; n < N; ++n) {
      const double d[3] = {0.6 + 0.3 * u(rng), 0.6 + 0.3 * u(rng), 0.6 + 0.3 * u(rng)};
      const double p[field::kParams] = {
          2 * u(rng), 2 * u(rng),   2 * u(rng),   d[0], 0.2 * u(rng),
          d[1],       0.2 * u(rng), 0.2 * u(rng), d[2], (1.0 + 0.5 * u(rng)) * 20.0 / double(N)};
      P.insert(P.end(), p, p + field::kParams);
      if (logdiag)
        for (int i : {3, 5, 8}) P[P.size() - field::kParams + std::size_t(i)] = std::log(p[i]);
    }
    return P;
  };
  Problem pr;
  const std::vector<double> target = gaussians(false);
  const field::Reference ref{target};
  for (std::int64_t b = 0; b < kPoints; ++b) {
    const double x[3] = {2 * u(rng), 2 * u(rng), 2 * u(rng)};
    pr.x.insert(pr.x.end(), {float(x[0]), float(x[1]), float(x[2])});
    pr.t.push_back(float(ref.f(x)));
  }
  for (double p : gaussians(true)) pr.P.push_back(float(p));
  return pr;
}

}  // namespace

int run(kiln::Engine& e, const std::string& dir, std::int64_t N, const std::string& dump) {
  const Problem pr = problem(N);
  if (!dump.empty()) {
    write(fmt::format("{}/train{}_x.f32", dump, N), pr.x);
    write(fmt::format("{}/train{}_t.f32", dump, N), pr.t);
    write(fmt::format("{}/train{}_P.f32", dump, N), pr.P);
  }
  const kiln::Shape ps = {N, field::kParams};
  const std::vector<float> zeros(std::size_t(N * field::kParams), 0.f);
  const kiln::Tensor x = e.from_host({kPoints, 3}, DType::f32, pr.x.data()),
                     t = e.from_host({kPoints}, DType::f32, pr.t.data());
  kiln::Tensor P[2] = {e.from_host(ps, DType::f32, pr.P.data()), e.empty(ps, DType::f32)};
  kiln::Tensor m[2] = {e.from_host(ps, DType::f32, zeros.data()), e.empty(ps, DType::f32)};
  kiln::Tensor v[2] = {e.from_host(ps, DType::f32, zeros.data()), e.empty(ps, DType::f32)};
  kiln::Tensor k1 = e.empty({1}, DType::f32), k2 = e.empty({1}, DType::f32);
  const kiln::Graph g = step_graph(dir, N);
  kiln::Tensor loss = e.empty(g.node(g.outputs().at(0)).shape, DType::f32);
  const kiln::Plan step(g);
  std::vector<float> losses;
  for (int it = 0; it < kIterations; ++it) {
    const float c1 = float(kLr / (1 - std::pow(kBeta1, it + 1)));
    const float c2 = float(1 / (1 - std::pow(kBeta2, it + 1)));
    k1.copy_from_host(&c1);
    k2.copy_from_host(&c2);
    const int a = it % 2, b = 1 - a;
    step.replay(e,
                {{"x", x.view()},
                 {"t", t.view()},
                 {"P", P[a].view()},
                 {"m", m[a].view()},
                 {"v", v[a].view()},
                 {"k1", k1.view()},
                 {"k2", k2.view()}},
                {{"loss", loss.view()},
                 {"P_out", P[b].view()},
                 {"m_out", m[b].view()},
                 {"v_out", v[b].view()}});
    float l = 0;
    loss.copy_to_host(&l);
    losses.push_back(l);
  }
  const double fell = losses.front() / std::max(losses.back(), 1e-30f);
  const bool ok = std::isfinite(losses.back()) && fell >= 10;
  fmt::print(
      "{{\"train_N\": {}, \"points\": {}, \"iterations\": {}, \"lr\": {}, \"loss_first\": {:.6e}, "
      "\"loss_100\": {:.6e}, \"loss_last\": {:.6e}, \"fell\": {:.1f}, \"check\": \"{}\"}}\n",
      N, kPoints, kIterations, kLr, losses.front(), losses[100], losses.back(), fell,
      ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace train
