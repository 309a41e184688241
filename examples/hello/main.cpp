// hello: silu(a * b + c), op by op, checked on the CPU. The three ops run as a plan with fusion
// off: one kernel each, every result rounded to the dtype as eager calls (kiln::mul(e, a, b))
// would round it; the plan compiles its three kernels side by side as soon as the engine exists. On
// a machine with no GPU (or with --offline) it compiles the same kernels for --arch into the cache
// instead.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <kiln/kiln.hpp>
#include <random>

namespace {

// silu(a * b + c) over n elements, one kernel per op.
kiln::Plan hello_plan(std::int64_t n, kiln::DType dtype) {
  kiln::Graph g;
  auto a = g.input("a", {n}, dtype), b = g.input("b", {n}, dtype), c = g.input("c", {n}, dtype);
  g.output(kiln::silu(a * b + c), "y");
  return kiln::Plan(g, /*fuse_ops=*/false);
}

void report(const kiln::Engine& e) {
  fmt::print("kernels:\n");
  for (const kiln::KernelRecord& k : e.kernels())
    fmt::print("  {:<28} {:<9} {:>7.1f} ms  {:>3} regs  key {}\n", k.name, k.source, k.compile_ms,
               k.registers, k.key);
  const kiln::CacheCounters c = e.counters();
  fmt::print(
      "cache {}: compiles {}, memory hits {}, bundle hits {}, disk hits {}, bad entries {}, "
      "compile {:.1f} ms\n",
      e.cache_dir(), c.compiles, c.memory_hits, c.bundle_hits, c.disk_hits, c.bad_entries,
      c.compile_ms);
}

int run_on_gpu(std::int64_t n, kiln::DType dtype) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> dist(-2, 2);
  std::vector<std::vector<unsigned char>> host(
      3, std::vector<unsigned char>(std::size_t(n) * kiln::size_of(dtype)));
  for (auto& h : host)
    for (std::int64_t i = 0; i < n; ++i)
      kiln::store_element(dtype, dist(rng), h.data() + i * kiln::size_of(dtype));

  const kiln::Plan plan = hello_plan(n, dtype);
  // Timed: engine creation (driver, context, cache, bundles), upload, three ops, download.
  const auto t0 = std::chrono::steady_clock::now();
  const auto since = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  kiln::Engine e;
  // Compiled (or read from the cache) now, side by side, while the driver brings up the GPU's
  // context; the first run then only launches.
  plan.compile(e);
  const double engine_ms = since();
  kiln::Tensor a = e.from_host({n}, dtype, host[0].data());
  kiln::Tensor b = e.from_host({n}, dtype, host[1].data());
  kiln::Tensor c = e.from_host({n}, dtype, host[2].data());
  const double upload_ms = since();
  kiln::Tensor y =
      std::move(plan.run(e, {{"a", a.view()}, {"b", b.view()}, {"c", c.view()}}).at("y"));
  const double run_ms = since();
  std::vector<unsigned char> out(y.bytes());
  y.copy_to_host(out.data());
  const double ready_ms = since();

  // The CPU reference rounds each op's result to the dtype, as the op-by-op GPU run does.
  double worst = 0;
  auto at = [&](int k, std::int64_t i) {
    return kiln::load_element(dtype, host[k].data() + i * kiln::size_of(dtype));
  };
  auto round = [&](double v) {
    unsigned char tmp[4];
    kiln::store_element(dtype, v, tmp);
    return kiln::load_element(dtype, tmp);
  };
  for (std::int64_t i = 0; i < n; ++i) {
    const double t = round(round(at(0, i) * at(1, i)) + at(2, i));
    const double want = t / (1 + std::exp(-t));
    const double have = kiln::load_element(dtype, out.data() + i * kiln::size_of(dtype));
    worst = std::max(worst, std::fabs(have - want) / std::max(1.0, std::fabs(want)));
  }
  const double tol = dtype == kiln::DType::f32 ? 1e-5 : 1e-2;
  fmt::print("silu(a*b + c) on {} ({}), {} x {}: max error {:.2e} (tolerance {:.0e}) -> {}\n",
             e.device_name(), e.arch(), n, kiln::name_of(dtype), worst, tol,
             worst <= tol ? "ok" : "FAIL");
  fmt::print(
      "engine creation to first result: {:.1f} ms ({} NVRTC compiles): engine and kernels {:.1f}, "
      "uploads {:.1f}, "
      "plan's first run {:.1f}, download {:.1f}\n",
      ready_ms, e.counters().compiles, engine_ms, upload_ms - engine_ms, run_ms - upload_ms,
      ready_ms - run_ms);
  report(e);
  return worst <= tol ? 0 : 1;
}

int precompile(std::int64_t n, kiln::DType dtype, const std::string& arch) {
  kiln::EngineOptions o;
  o.offline = true;
  o.arch = arch;
  kiln::Engine e(o);
  hello_plan(n, dtype).compile(e);
  fmt::print("precompiled silu(a*b + c) for {} x {} on {} (no GPU used)\n", n, kiln::name_of(dtype),
             arch);
  report(e);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hello: silu(a*b + c) op by op with kiln"};
  std::int64_t n = 1 << 24;
  std::string dtype = "f32", arch = "sm_90a";
  bool offline = false;
  app.add_option("-n,--numel", n, "Elements per tensor")->check(CLI::PositiveNumber);
  app.add_option("--dtype", dtype, "f32, f16 or bf16");
  app.add_option("--arch", arch, "Target arch when compiling offline");
  app.add_flag("--offline", offline, "Only compile (for --arch) into the cache; no GPU needed");
  CLI11_PARSE(app, argc, argv);
  try {
    const kiln::DType t = kiln::parse_dtype(dtype);
    std::string why;
    if (!offline && !kiln::gpu_available(&why)) {
      fmt::print("no GPU here ({}); compiling the kernels for {} instead\n", why, arch);
      offline = true;
    }
    return offline ? precompile(n, t, arch) : run_on_gpu(n, t);
  } catch (const kiln::Error& e) {
    fmt::print(stderr, "hello: {}\n", e.what());
    return 1;
  }
}
