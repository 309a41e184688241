// gfn: seed 001's geodesic flow integrator on kiln. Its leapfrog step (leapfrog.cuh, a user's
// template: the Christoffel term Gamma(v) = (v U)^2 W^T twice, on tensor cores for many tokens)
// is one kernel; 8 steps are a plan of 8 template nodes, replayed as one CUDA graph. Each of 8
// eager steps is checked against an fp64 step from the state it was given (rounded to the storage
// type as the kernel stores it), and the plan must give the eager steps' bits; timings print as
// JSON lines (bench/gfn.py puts PyTorch beside them). With --offline (or no GPU) it compiles the
// kernels for --arch instead.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <kiln/kiln.hpp>
#include <map>
#include <random>
#include <regex>

#include "../common/seed_app.hpp"

namespace {

using kiln::DType;
using seed_app::bytes_of;
using seed_app::per_call_us;
using seed_app::values_of;

constexpr int kSteps = 8;
constexpr double kDt = 0.1;

struct Case {
  std::int64_t B, d, r;
};
// The seed's shape, a batch that is not a multiple of the 16-token tile (and r = 16), and a
// small batch.
const std::vector<Case> kCases = {{8192, 512, 32}, {1030, 256, 16}, {64, 256, 16}};

// Up to this many tokens, a step runs a block of several warps per pair of tokens
// (gfn_leapfrog_small): blocks that stage U and W would each wait for their copy.
constexpr std::int64_t kSmallBatch = 1024;

// Tunable values to put first (the default) in place of the template's own: --tunables WD=8.
using Firsts = std::map<std::string, int>;

std::vector<int> first(const Firsts& firsts, const std::string& name, std::vector<int> values) {
  const auto it = firsts.find(name);
  if (it == firsts.end()) return values;
  values.erase(std::remove(values.begin(), values.end(), it->second), values.end());
  values.insert(values.begin(), it->second);
  return values;
}

kiln::Template leapfrog(const std::string& dir, std::int64_t B, const Firsts& tunables) {
  using K = kiln::TemplateParam::Kind;
  kiln::Template t = kiln::Template::from_file(dir + "/leapfrog.cuh");
  t.params({{"s", K::tensor},
            {"f", K::tensor},
            {"U", K::tensor},
            {"W", K::tensor},
            {"s_out", K::tensor},
            {"B", K::i32},
            {"d", K::i32},
            {"r", K::i32},
            {"dt", K::f32}})
      .output("s_out", "s")
      .header_file("leapfrog_mma.cuh", dir + "/leapfrog_mma.cuh");
  if (B <= kSmallBatch)
    return t.instance("gfn_leapfrog_small<{s}, {d}, {r}, {WARPS}>")
        .tunable("WARPS", first(tunables, "WARPS", {8, 4}))
        .launch({"ceilf(B / 2)"}, {"WARPS * 32"});
  return t.instance("gfn_leapfrog<{s}, {d}, {r}, {WD}, {UNROLL}>")
      .tunable("WD", first(tunables, "WD", {4, 8}))
      .tunable("UNROLL", first(tunables, "UNROLL", {2, 1}))
      .launch({"ceilf(B / 16)"}, {"WD * 32"})
      .shared_bytes("64 * d + 128 * WD * r");
}

// kSteps leapfrog steps of the state s [2, B, d] under force f, one template node each.
kiln::Graph steps_graph(const kiln::Template& t, const Case& c, DType dt) {
  kiln::Graph g;
  g.define_template("leapfrog", t);
  kiln::Value s = g.input("s", {2, c.B, c.d}, dt);
  auto f = g.input("f", {c.B, c.d}, dt), U = g.input("U", {c.d, c.r}, dt),
       W = g.input("W", {c.d, c.r}, dt);
  for (int k = 0; k < kSteps; ++k)
    s = g.add("leapfrog", {s, f, U, W, double(c.B), double(c.d), double(c.r), kDt});
  g.output(s, "out");
  return g;
}

std::vector<unsigned char> random_of(DType t, std::int64_t n, double scale, std::mt19937_64& rng) {
  std::normal_distribution<double> dist(0, scale);
  std::vector<unsigned char> h(std::size_t(n) * kiln::size_of(t));
  for (std::int64_t i = 0; i < n; ++i)
    kiln::store_element(t, dist(rng), &h[std::size_t(i) * kiln::size_of(t)]);
  return h;
}

// Gamma(v) for one token in fp64.
void christoffel(const double* v, const std::vector<double>& U, const std::vector<double>& W,
                 const Case& c, double* g) {
  std::vector<double> h(std::size_t(c.r), 0.0);
  for (std::int64_t i = 0; i < c.d; ++i)
    for (std::int64_t j = 0; j < c.r; ++j) h[std::size_t(j)] += v[i] * U[std::size_t(i * c.r + j)];
  for (std::int64_t i = 0; i < c.d; ++i) {
    g[i] = 0;
    for (std::int64_t j = 0; j < c.r; ++j)
      g[i] += h[std::size_t(j)] * h[std::size_t(j)] * W[std::size_t(i * c.r + j)];
  }
}

// `steps` leapfrog steps of state `s` in fp64, rounded to `t` after each (as the kernel stores).
std::vector<double> reference(std::vector<double> s, const std::vector<double>& f,
                              const std::vector<double>& U, const std::vector<double>& W,
                              const Case& c, DType t, int steps) {
  const std::size_t n = std::size_t(c.B * c.d);
  std::vector<double> g(std::size_t(c.d)), vh(std::size_t(c.d));
  const auto round = [&](double v) {
    unsigned char b[4];
    kiln::store_element(t, v, b);
    return kiln::load_element(t, b);
  };
  for (int k = 0; k < steps; ++k)
    for (std::int64_t b = 0; b < c.B; ++b) {
      double* x = &s[std::size_t(b * c.d)];
      double* v = &s[n + std::size_t(b * c.d)];
      const double* fb = &f[std::size_t(b * c.d)];
      christoffel(v, U, W, c, g.data());
      for (std::int64_t i = 0; i < c.d; ++i) {
        vh[std::size_t(i)] = v[i] + 0.5 * kDt * (fb[i] - g[std::size_t(i)]);
        x[i] = round(x[i] + kDt * vh[std::size_t(i)]);
      }
      christoffel(vh.data(), U, W, c, g.data());
      for (std::int64_t i = 0; i < c.d; ++i)
        v[i] = round(vh[std::size_t(i)] + 0.5 * kDt * (fb[i] - g[std::size_t(i)]));
    }
  return s;
}

// The largest difference of `got` from `want` relative to the largest |want| (at least 1): Gamma
// is a sum of terms of both signs, so an element's own size does not bound its rounding.
double worst_error(const std::vector<double>& got, const std::vector<double>& want) {
  double worst = 0, scale = 1;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(got[i] - want[i]);
    worst = std::max(worst, std::isnan(e) ? INFINITY : e);
    scale = std::max(scale, std::fabs(want[i]));
  }
  return worst / scale;
}

std::vector<kiln::Operand> args_of(const kiln::Tensor& s, const kiln::Tensor& f,
                                   const kiln::Tensor& U, const kiln::Tensor& W,
                                   const kiln::Tensor& out, const Case& c) {
  return {s.view(),    f.view(),    U.view(),    W.view(), out.view(),
          double(c.B), double(c.d), double(c.r), kDt};
}

int run_case(kiln::Engine& e, const kiln::Template& t, const Case& c, DType dt) {
  std::mt19937_64 rng(1);
  const std::int64_t n = c.B * c.d;
  const auto hs = random_of(dt, 2 * n, 1.0, rng), hf = random_of(dt, n, 1.0, rng),
             hU = random_of(dt, c.d * c.r, 0.5 / std::sqrt(double(c.d)), rng),
             hW = random_of(dt, c.d * c.r, 0.5 / std::sqrt(double(c.r)), rng);
  const kiln::Tensor s = e.from_host({2, c.B, c.d}, dt, hs.data()),
                     f = e.from_host({c.B, c.d}, dt, hf.data()),
                     U = e.from_host({c.d, c.r}, dt, hU.data()),
                     W = e.from_host({c.d, c.r}, dt, hW.data());
  const std::vector<double> vf = values_of(dt, hf), vU = values_of(dt, hU), vW = values_of(dt, hW);
  // kSteps eager steps, each against fp64 from the state the last one stored: the integrator
  // amplifies any difference step by step, so a check of 8 steps from the start would measure
  // the dynamics, not the kernel.
  std::vector<kiln::Tensor> states;
  states.push_back(e.from_host({2, c.B, c.d}, dt, hs.data()));
  double err1 = 0;
  for (int k = 0; k < kSteps; ++k) {
    states.push_back(e.empty({2, c.B, c.d}, dt));
    states.back().fill_bytes(0xff);
    kiln::launch(e, t, args_of(states[std::size_t(k)], f, U, W, states.back(), c));
    const std::vector<double> want =
        reference(values_of(dt, bytes_of(states[std::size_t(k)])), vf, vU, vW, c, dt, 1);
    err1 = std::max(err1, worst_error(values_of(dt, bytes_of(states.back())), want));
  }
  kiln::Tensor out = e.empty({2, c.B, c.d}, dt);
  const std::vector<kiln::Operand> args = args_of(s, f, U, W, out, c);
  const double step_us = per_call_us(e, [&] { kiln::launch(e, t, args); });

  // The plan of kSteps nodes, replayed: the eager steps' bits.
  const kiln::Plan plan(steps_graph(t, c, dt));
  const std::map<std::string, kiln::TensorView> in = {
      {"s", s.view()}, {"f", f.view()}, {"U", U.view()}, {"W", W.view()}};
  out.fill_bytes(0xff);
  plan.replay(e, in, {{"out", out.view()}});
  const bool same = bytes_of(out) == bytes_of(states.back());
  const double steps_us = per_call_us(e, [&] { plan.replay(e, in, {{"out", out.view()}}); });
  // f32: sums of 512 products in another order. bf16: a rounding of the state that goes the
  // other way is an ulp (2^-8 to 2^-7 of the element, and most elements are well below the
  // largest).
  const double tol1 = dt == DType::f32 ? 1e-6 : 4e-3;
  const bool ok = err1 <= tol1 && same;
  fmt::print(
      "{{\"B\": {}, \"d\": {}, \"r\": {}, \"dtype\": \"{}\", \"step_us\": {:.2f}, "
      "\"steps{}_replay_us\": {:.2f}, \"step_err\": {:.2e}, \"plan_equals_steps\": {}, "
      "\"check\": \"{}\"}}\n",
      c.B, c.d, c.r, kiln::name_of(dt), step_us, kSteps, steps_us, err1, same, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gfn: seed 001's leapfrog integrator (a user's template) on kiln", "gfn"};
  std::string dir = KILN_EXAMPLE_DIR;
  app.add_option("--dir", dir, "Where leapfrog.cuh is");
  std::vector<std::string> pairs;
  app.add_option(
         "--tunables", pairs,
         "Tunable values to use by default, e.g. WD=8,UNROLL=1 (to time one against another)")
      ->delimiter(',')
      ->check([](const std::string& p) {
        return std::regex_match(p, std::regex("[A-Z_]+=[0-9]+")) ? "" : "not NAME=VALUE: " + p;
      });
  Firsts tunables;
  app.callback([&] {
    for (const std::string& p : pairs)
      tunables[p.substr(0, p.find('='))] = std::stoi(p.substr(p.find('=') + 1));
  });
  return seed_app::run_main(
      app, argc, argv,
      [&](const std::string& arch) {
        kiln::Engine e = seed_app::offline_engine(arch);
        for (const Case& c : kCases)
          for (DType dt : {DType::f32, DType::bf16})
            seed_app::compile(e, steps_graph(leapfrog(dir, c.B, tunables), c, dt));
        return seed_app::print_kernels(e);
      },
      [&](kiln::Engine& e) {
        int status = 0;
        for (const Case& c : kCases)
          for (DType dt : {DType::f32, DType::bf16})
            status |= run_case(e, leapfrog(dir, c.B, tunables), c, dt);
        return status;
      });
}
