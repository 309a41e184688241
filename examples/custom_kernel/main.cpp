// custom_kernel: a user's own kernel template (window.cuh, which includes window_math.cuh) run by
// kiln: specialized for the tensors' dtype and the tunables BLOCK and ITEMS, compiled by NVRTC,
// kept in kiln's cache (keyed by every byte of both files), launched on the engine's stream and
// checked against a CPU reference. With --offline (or no GPU) it compiles the kernels for --arch
// into the cache instead; a second run finds them there and compiles nothing.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <kiln/kiln.hpp>
#include <random>

namespace {

using Kind = kiln::TemplateParam::Kind;

kiln::Template window_template(const std::string& dir) {
  kiln::Template t = kiln::Template::from_file(dir + "/window.cuh");
  t.header_file("window_math.cuh", dir + "/window_math.cuh")
      .params({{"x", Kind::tensor},
               {"y", Kind::tensor},
               {"n", Kind::i64},
               {"alpha", Kind::f32},
               {"beta", Kind::f32}})
      .instance("gauss_window<{x}, {BLOCK}, {ITEMS}>")
      .tunable("BLOCK", {256, 128, 512, 1024})
      .tunable("ITEMS", {4, 1, 2, 8})
      .launch({"ceilf(n / (BLOCK * ITEMS))"}, {"BLOCK"});
  return t;
}

constexpr double kAlpha = 0.5, kBeta = 0.25;

int run_on_gpu(const kiln::Template& t, std::int64_t n, kiln::DType dtype) {
  kiln::Engine e;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dist(-3, 3);
  const std::size_t es = kiln::size_of(dtype);
  std::vector<unsigned char> host(std::size_t(n) * es), out(host.size());
  for (std::int64_t i = 0; i < n; ++i) kiln::store_element(dtype, dist(rng), &host[i * es]);
  const kiln::Tensor x = e.from_host({n}, dtype, host.data());
  kiln::Tensor y = e.empty({n}, dtype);
  y.fill_bytes(0xff);  // poisoned: an element the kernel misses shows as NaN
  kiln::launch(e, t, {x.view(), y.view(), double(n), kAlpha, kBeta});
  y.copy_to_host(out.data());
  double worst = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double v = kiln::load_element(dtype, &host[i * es]);
    const double want = v * std::exp(-kAlpha * v * v) + kBeta;
    const double err = std::fabs(kiln::load_element(dtype, &out[i * es]) - want);
    worst = std::isnan(err) ? INFINITY : std::max(worst, err / std::max(1.0, std::fabs(want)));
  }
  const double tol = dtype == kiln::DType::f32 ? 1e-5 : 1e-2;
  fmt::print(
      "{} ({}): gauss_window over {} {} values: worst relative error {:.2e} (tolerance {:.0e})\n",
      e.device_name(), e.arch(), n, kiln::name_of(dtype), worst, tol);
  return worst <= tol ? 0 : 1;
}

int precompile(const kiln::Template& t, std::int64_t n, kiln::DType dtype,
               const std::string& arch) {
  kiln::EngineOptions o;
  o.offline = true;
  o.arch = arch;
  kiln::Engine e(o);
  kiln::TensorView x;
  x.shape = {n};
  x.dtype = dtype;
  const kiln::KernelRecord r = kiln::precompile(e, t, {x, x, double(n), kAlpha, kBeta});
  fmt::print("{} for {}: {} ({:.1f} ms), key {}\ncompiles: {}\n", r.name, arch, r.source,
             r.compile_ms, r.key, e.counters().compiles);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"custom_kernel: a user's kernel template run by kiln"};
  std::int64_t n = (1 << 20) + 3;
  std::string dtype = "f32", arch = "sm_90a", dir = KILN_EXAMPLE_DIR;
  bool offline = false;
  app.add_option("-n,--numel", n, "Elements")->check(CLI::PositiveNumber);
  app.add_option("--dtype", dtype, "f32, f16 or bf16");
  app.add_option("--arch", arch, "Target arch when compiling offline");
  app.add_option("--dir", dir, "Where window.cuh and window_math.cuh are");
  app.add_flag("--offline", offline, "Only compile (for --arch) into the cache; no GPU needed");
  CLI11_PARSE(app, argc, argv);
  try {
    const kiln::DType t = kiln::parse_dtype(dtype);
    const kiln::Template tmpl = window_template(dir);
    std::string why;
    if (!offline && !kiln::gpu_available(&why)) {
      fmt::print("no GPU here ({}); compiling the kernel for {} instead\n", why, arch);
      offline = true;
    }
    return offline ? precompile(tmpl, n, t, arch) : run_on_gpu(tmpl, n, t);
  } catch (const kiln::Error& e) {
    fmt::print(stderr, "custom_kernel: {}\n", e.what());
    return 1;
  }
}
