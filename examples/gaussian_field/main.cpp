// gaussian_field: seed 000's Gaussian field on kiln, its forward and backward (the full lower
// triangle of dL) as a user's templates (gauss.cuh), planned with kiln's sums of their partials.
// It checks f, dx and dP against an fp64 reference and the gradients against finite differences
// on a small case; times the forward and forward + backward plans, replayed, at the bench sizes
// (checked on a sample); and trains a field with Adam (one plan per iteration: forward, MSE,
// backward, the update; replayed), printing the loss before and after. Timings and losses print
// as JSON lines; bench/gaussian_field.py puts PyTorch beside them and trains the same field from
// the data --dump writes. With --offline (or no GPU) it compiles the kernels for --arch instead.
#include <fmt/format.h>

#include <functional>
#include <random>

#include "../common/seed_app.hpp"
#include "field.hpp"

namespace {

using kiln::DType;
using Host = std::vector<float>;
using seed_app::per_call_us;

struct Field {
  std::int64_t N, B;
  Host x, P, gf;  // P: L itself on the diagonal
};

// N Gaussians around the cube [-2, 2]^3 and B points in it; gf in [-1, 1].
Field random_field(std::int64_t N, std::int64_t B, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Field f{N, B, {}, {}, {}};
  for (std::int64_t b = 0; b < B; ++b) {
    for (int i = 0; i < 3; ++i) f.x.push_back(2 * u(rng));
    f.gf.push_back(u(rng));
  }
  for (std::int64_t n = 0; n < N; ++n) {
    const float p[field::kParams] = {2 * u(rng),           2 * u(rng),    2 * u(rng),
                                     0.8f + 0.4f * u(rng), 0.3f * u(rng), 0.8f + 0.4f * u(rng),
                                     0.3f * u(rng),        0.3f * u(rng), 0.8f + 0.4f * u(rng),
                                     1.0f + 0.5f * u(rng)};
    f.P.insert(f.P.end(), p, p + field::kParams);
  }
  return f;
}

std::vector<double> wide(const Host& h) { return {h.begin(), h.end()}; }

Host to_host(const kiln::Tensor& t) {
  Host h(std::size_t(t.numel()));
  t.copy_to_host(h.data());
  return h;
}

// The plan computing f, and with `backward` also dx and dP, at F's sizes.
kiln::Graph field_graph(const std::string& dir, std::int64_t N, std::int64_t B, bool backward) {
  kiln::Graph g;
  field::declare(g, dir);
  auto x = g.input("x", {B, 3}, DType::f32), P = g.input("P", {N, field::kParams}, DType::f32);
  g.output(field::forward(g, x, P, B, N, 0), "f");
  if (backward) {
    auto gf = g.input("gf", {B}, DType::f32);
    g.output(field::grad_x(g, x, P, gf, B, N, 0), "dx");
    g.output(field::grad_p(g, x, P, gf, B, N, 0), "dP");
  }
  return g;
}

struct Run {
  Host f, dx, dP;
  double forward_us = 0, both_us = 0;
};

Run run_field(kiln::Engine& e, const std::string& dir, const Field& F, bool time) {
  const kiln::Tensor x = e.from_host({F.B, 3}, DType::f32, F.x.data()),
                     P = e.from_host({F.N, field::kParams}, DType::f32, F.P.data()),
                     gf = e.from_host({F.B}, DType::f32, F.gf.data());
  kiln::Tensor f = e.empty({F.B}, DType::f32), dx = e.empty({F.B, 3}, DType::f32),
               dP = e.empty({F.N, field::kParams}, DType::f32);
  for (kiln::Tensor* t : {&f, &dx, &dP}) t->fill_bytes(0xff);
  const kiln::Plan fwd(field_graph(dir, F.N, F.B, false)), both(field_graph(dir, F.N, F.B, true));
  const std::map<std::string, kiln::TensorView> in = {
      {"x", x.view()}, {"P", P.view()}, {"gf", gf.view()}};
  const std::map<std::string, kiln::TensorView> out = {
      {"f", f.view()}, {"dx", dx.view()}, {"dP", dP.view()}};
  both.replay(e, in, out);
  Run r{to_host(f), to_host(dx), to_host(dP)};
  if (time) {
    r.forward_us = per_call_us(e, [&] {
      fwd.replay(e, {{"x", x.view()}, {"P", P.view()}}, {{"f", f.view()}});
    });
    r.both_us = per_call_us(e, [&] { both.replay(e, in, out); });
  }
  return r;
}

// The worst error of kiln's f, dx and dP against fp64 at `points` and `gaussians` (all: empty),
// each relative to the largest magnitude of its kind.
double check(const Field& F, const Run& r, std::int64_t sample) {
  const std::vector<double> P = wide(F.P);
  const field::Reference ref{P};
  std::vector<double> dP(P.size(), 0.0);
  double worst = 0, fmax = 1e-30, xmax = 1e-30, pmax = 1e-30;
  std::vector<std::pair<std::int64_t, double>> errs;
  const std::int64_t step = std::max<std::int64_t>(1, F.B / sample);
  for (std::int64_t b = 0; b < F.B; b += step) {
    const std::vector<double> x = {F.x[3 * b], F.x[3 * b + 1], F.x[3 * b + 2]};
    const double want = ref.f(x.data());
    double dx[3];
    ref.grads(x.data(), F.gf[std::size_t(b)], dx, nullptr);
    fmax = std::max(fmax, std::fabs(want));
    worst = std::max(worst, std::fabs(want - r.f[std::size_t(b)]));
    for (int i = 0; i < 3; ++i) {
      xmax = std::max(xmax, std::fabs(dx[i]));
      errs.emplace_back(1, std::fabs(dx[i] - r.dx[std::size_t(3 * b + i)]));
    }
  }
  worst /= fmax;
  for (const auto& [kind, err] : errs) worst = std::max(worst, err / xmax);
  // dP over every point: the sums of the sampled points would not be kiln's.
  if (F.N * F.B <= std::int64_t(1) << 26) {
    double dx[3];
    for (std::int64_t b = 0; b < F.B; ++b) {
      const double x[3] = {F.x[3 * b], F.x[3 * b + 1], F.x[3 * b + 2]};
      ref.grads(x, F.gf[std::size_t(b)], dx, &dP);
    }
    for (double v : dP) pmax = std::max(pmax, std::fabs(v));
    for (std::size_t i = 0; i < dP.size(); ++i)
      worst = std::max(worst, std::fabs(dP[i] - r.dP[i]) / pmax);
  }
  return worst;
}

// kiln's gradients of sum_b gf_b f(x_b) against central differences of the fp64 reference.
double finite_differences(const Field& F, const Run& r) {
  const double h = 1e-5;
  std::vector<double> P = wide(F.P);
  const auto loss = [&] {
    const field::Reference ref{P};
    double s = 0;
    for (std::int64_t b = 0; b < F.B; ++b) {
      const double x[3] = {F.x[3 * b], F.x[3 * b + 1], F.x[3 * b + 2]};
      s += F.gf[std::size_t(b)] * ref.f(x);
    }
    return s;
  };
  double worst = 0, scale = 1e-30;
  std::vector<double> fd(P.size());
  for (std::size_t i = 0; i < P.size(); ++i) {
    const double keep = P[i];
    P[i] = keep + h;
    const double up = loss();
    P[i] = keep - h;
    fd[i] = (up - loss()) / (2 * h);
    P[i] = keep;
    scale = std::max(scale, std::fabs(fd[i]));
  }
  for (std::size_t i = 0; i < P.size(); ++i) worst = std::max(worst, std::fabs(fd[i] - r.dP[i]));
  return worst / scale;
}

}  // namespace

namespace train {
kiln::Graph step_graph(const std::string& dir, std::int64_t N);
int run(kiln::Engine& e, const std::string& dir, std::int64_t N, const std::string& dump);
}  // namespace train

namespace {

const std::vector<std::pair<std::int64_t, std::int64_t>> kBench = {{1000, 500}, {10000, 20000}};

int run_all(kiln::Engine& e, const std::string& dir, const std::string& dump) {
  int status = 0;
  const Field small = random_field(20, 50, 7);
  const Run r = run_field(e, dir, small, false);
  const double ref_err = check(small, r, small.B), fd_err = finite_differences(small, r);
  const bool small_ok = ref_err <= 1e-4 && fd_err <= 1e-3;
  fmt::print(
      "{{\"case\": \"N=20 B=50\", \"vs_fp64\": {:.2e}, \"vs_finite_differences\": {:.2e}, "
      "\"check\": \"{}\"}}\n",
      ref_err, fd_err, small_ok ? "ok" : "FAIL");
  status |= small_ok ? 0 : 1;
  for (const auto& [N, B] : kBench) {
    const Field F = random_field(N, B, 11);
    const Run b = run_field(e, dir, F, true);
    const double err = check(F, b, 256);
    fmt::print(
        "{{\"N\": {}, \"B\": {}, \"forward_us\": {:.1f}, \"forward_backward_us\": {:.1f}, "
        "\"err\": {:.2e}, \"check\": \"{}\"}}\n",
        N, B, b.forward_us, b.both_us, err, err <= 1e-4 ? "ok" : "FAIL");
    status |= err <= 1e-4 ? 0 : 1;
  }
  for (std::int64_t N : {20, 1000}) status |= train::run(e, dir, N, dump);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gaussian_field: seed 000's Gaussian field, forward, backward and training",
               "gaussian_field"};
  std::string dir = KILN_EXAMPLE_DIR, dump;
  app.add_option("--dir", dir, "Where gauss.cuh is");
  app.add_option("--dump", dump, "Write the training data and initial fields here (for PyTorch)");
  return seed_app::run_main(
      app, argc, argv,
      [&](const std::string& arch) {
        kiln::Engine e = seed_app::offline_engine(arch);
        for (const auto& [N, B] : kBench) seed_app::compile(e, field_graph(dir, N, B, true));
        for (std::int64_t N : {20, 1000}) seed_app::compile(e, train::step_graph(dir, N));
        return seed_app::print_kernels(e);
      },
      [&](kiln::Engine& e) { return run_all(e, dir, dump); });
}
