// Elementwise benchmark driver: times kiln's ops at 64M elements and the device-to-device copy
// ceiling, checks every output against the fp64 CPU reference, prints one JSON object a line.
// bench/run.py runs it beside PyTorch and prints the table (BENCH.md).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <kiln/kiln.hpp>
#include <map>
#include <random>
#include <thread>

#include "bench/common.hpp"
#include "engine/runtime/driver.hpp"
#include "ops/op.hpp"

namespace {

struct Host {
  kiln::DType dtype;
  std::vector<unsigned char> bytes;
  double at(std::int64_t i) const {
    return kiln::load_element(dtype, bytes.data() + i * kiln::size_of(dtype));
  }
};

// Random values in [lo, hi], filled by several threads.
Host random_host(kiln::DType t, std::int64_t n, double lo, double hi, std::uint64_t seed) {
  Host h{t, std::vector<unsigned char>(std::size_t(n) * kiln::size_of(t))};
  const int threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([&, w] {
      std::mt19937_64 rng(seed * 1000 + w);
      std::uniform_real_distribution<double> d(lo, hi);
      std::bernoulli_distribution coin(0.5);
      for (std::int64_t i = w; i < n; i += threads)
        kiln::store_element(t, t == kiln::DType::boolean ? double(coin(rng)) : d(rng),
                            h.bytes.data() + i * kiln::size_of(t));
    });
  for (auto& th : pool) th.join();
  return h;
}

// Largest relative error of `out` against f(inputs) over every element; NaN if any is NaN.
double check(const Host& out, const std::vector<const Host*>& in,
             const std::function<double(const double*)>& f) {
  double worst = 0;
  const std::int64_t n = std::int64_t(out.bytes.size() / kiln::size_of(out.dtype));
  for (std::int64_t i = 0; i < n; ++i) {
    double x[3] = {0, 0, 0};
    for (std::size_t k = 0; k < in.size(); ++k) x[k] = in[k]->at(i);
    const double want = f(x), have = out.at(i);
    const double err = std::fabs(have - want) / std::max(1.0, std::fabs(want));
    if (!(err <= worst)) worst = err;  // NaN sticks
  }
  return worst;
}

double tolerance(kiln::DType t) { return t == kiln::DType::f32 ? 1e-5 : 1e-2; }

}  // namespace

int run(int argc, char** argv) {
  CLI::App app{"kiln elementwise benchmark"};
  std::int64_t n = 64ll << 20;
  int reps = 30;
  app.add_option("-n,--numel", n, "Elements per tensor");
  app.add_option("--reps", reps, "Timed runs (median reported)");
  CLI11_PARSE(app, argc, argv);

  kiln::Engine e;
  // Copy ceiling: 1 GiB device-to-device, bytes read + written.
  {
    const std::size_t bytes = std::size_t(1) << 30;
    kiln::Tensor src = e.empty({std::int64_t(bytes)}, kiln::DType::boolean),
                 dst = e.empty({std::int64_t(bytes)}, kiln::DType::boolean);
    src.fill_bytes(0x5a);
    const double ms = e.time_median_ms(
        [&] {
          KILN_CU_CHECK(
              kiln::runtime::driver().cuMemcpyDtoDAsync(dst.view().data, src.view().data, bytes,
                                                        static_cast<CUstream>(e.stream())),
              "copy ceiling");
        },
        3, reps);
    fmt::print(
        "{{\"workload\": \"copy\", \"dtype\": \"-\", \"numel\": {}, \"kiln_us\": {:.2f}, "
        "\"bytes\": {}, \"check\": \"ok\"}}\n",
        bytes, ms * 1e3, 2 * bytes);
  }

  for (kiln::DType t : {kiln::DType::f32, kiln::DType::bf16}) {
    const Host a = random_host(t, n, -4, 4, 1), b = random_host(t, n, -4, 4, 2),
               c = random_host(t, n, -4, 4, 3);
    const Host cond = random_host(kiln::DType::boolean, n, 0, 1, 4);
    kiln::Tensor A = e.from_host({n}, t, a.bytes.data()), B = e.from_host({n}, t, b.bytes.data()),
                 C = e.from_host({n}, t, c.bytes.data()),
                 K = e.from_host({n}, kiln::DType::boolean, cond.bytes.data());
    kiln::Tensor out = e.empty({n}, t), tmp1 = e.empty({n}, t), tmp2 = e.empty({n}, t);
    struct Work {
      const char* name;
      std::vector<kiln::Operand> args;
      std::vector<const Host*> hosts;
    };
    const std::vector<Work> works = {{"add", {A, B}, {&a, &b}},
                                     {"mul", {A, B}, {&a, &b}},
                                     {"silu", {A}, {&a}},
                                     {"where", {K, A, B}, {&cond, &a, &b}}};
    for (const Work& w : works) {
      out.fill_bytes(0xff);
      const auto& op = kiln::ops::find_op(w.name);
      const double ms = 1e-3 * kiln::bench::per_call_us(
                                   e, [&] { kiln::call_into(e, w.name, out, w.args); }, reps);
      Host got{t, std::vector<unsigned char>(out.bytes())};
      out.copy_to_host(got.bytes.data());
      const double err =
          check(got, w.hosts, [&](const double* x) { return op.reference(x[0], x[1], x[2]); });
      std::size_t bytes = out.bytes();
      for (const Host* h : w.hosts) bytes += h->bytes.size();
      fmt::print(
          "{{\"workload\": \"{}\", \"dtype\": \"{}\", \"numel\": {}, \"kiln_us\": {:.2f}, "
          "\"bytes\": {}, \"check\": \"{}\", \"max_err\": {:.3g}}}\n",
          w.name, kiln::name_of(t), n, ms * 1e3, bytes, err <= tolerance(t) ? "ok" : "FAIL", err);
    }
    // silu(a*b + c) op by op: three kernels; useful bytes are what one fused kernel would move.
    out.fill_bytes(0xff);
    const double ms = 1e-3 * kiln::bench::per_call_us(
                                 e,
                                 [&] {
                                   kiln::call_into(e, "mul", tmp1, {A, B});
                                   kiln::call_into(e, "add", tmp2, {tmp1, C});
                                   kiln::call_into(e, "silu", out, {tmp2});
                                 },
                                 reps);
    Host got{t, std::vector<unsigned char>(out.bytes())};
    out.copy_to_host(got.bytes.data());
    auto rnd = [&](double v) {
      unsigned char buf[4];
      kiln::store_element(t, v, buf);
      return kiln::load_element(t, buf);
    };
    const double err = check(got, {&a, &b, &c}, [&](const double* x) {
      const double s = rnd(rnd(x[0] * x[1]) + x[2]);
      return s / (1 + std::exp(-s));
    });
    fmt::print(
        "{{\"workload\": \"silu(a*b+c) op by op\", \"dtype\": \"{}\", \"numel\": {}, \"kiln_us\": "
        "{:.2f}, \"bytes\": {}, \"check\": \"{}\", \"max_err\": {:.3g}}}\n",
        kiln::name_of(t), n, ms * 1e3, 4 * out.bytes(), err <= tolerance(t) ? "ok" : "FAIL", err);

    // The same as a graph: one fused kernel, intermediates in registers.
    kiln::Graph g;
    auto ga = g.input("a", {n}, t), gb = g.input("b", {n}, t), gc = g.input("c", {n}, t);
    g.output(kiln::silu(ga * gb + gc));
    const kiln::Plan plan(g);
    const std::map<std::string, kiln::TensorView> ins = {{"a", A}, {"b", B}, {"c", C}};
    const std::map<std::string, kiln::TensorView> outs = {{g.node(g.outputs()[0]).name, out}};
    out.fill_bytes(0xff);
    const double fused_ms = 1e-3 * kiln::bench::per_call_us(
                                       e, [&] { plan.run(e, ins, outs); }, reps);
    out.copy_to_host(got.bytes.data());
    const double fused_err = check(got, {&a, &b, &c}, [&](const double* x) {
      const double s = x[0] * x[1] + x[2];
      return s / (1 + std::exp(-s));
    });
    fmt::print(
        "{{\"workload\": \"silu(a*b+c) fused\", \"dtype\": \"{}\", \"numel\": {}, \"kiln_us\": "
        "{:.2f}, \"bytes\": {}, \"check\": \"{}\", \"max_err\": {:.3g}}}\n",
        kiln::name_of(t), n, fused_ms * 1e3, 4 * out.bytes(),
        fused_err <= tolerance(t) ? "ok" : "FAIL", fused_err);
  }
  kiln::bench::print_jit_counters(e);
  return 0;
}

int main(int argc, char** argv) {
  return kiln::bench::guarded(argv[0], [&] { return run(argc, argv); });
}
