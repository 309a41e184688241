#pragma once
// What the seed apps (examples/diffusion_step, gfn, rusty_ops, gaussian_field) share: their
// main (the offline fallback, typed errors as one line), timing back-to-back calls, host copies
// of tensors, and the listing of what an offline engine compiled.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <functional>
#include <kiln/kiln.hpp>
#include <string>
#include <vector>

namespace seed_app {

/// Microseconds per call: the median over 20 events of `calls` back-to-back calls.
inline double per_call_us(kiln::Engine& e, const std::function<void()>& fn, int calls = 10) {
  const auto batch = [&] {
    for (int i = 0; i < calls; ++i) fn();
  };
  return 1e3 * e.time_median_ms(batch, 2, 20) / calls;
}

/// The tensor's bytes, on the host.
inline std::vector<unsigned char> bytes_of(const kiln::Tensor& t) {
  std::vector<unsigned char> h(t.bytes());
  t.copy_to_host(h.data());
  return h;
}

/// Each element of `bytes` (of dtype `t`) as a double.
inline std::vector<double> values_of(kiln::DType t, const std::vector<unsigned char>& bytes) {
  std::vector<double> v(bytes.size() / kiln::size_of(t));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = kiln::load_element(t, &bytes[i * kiln::size_of(t)]);
  return v;
}

/// Where compile() also writes each graph it compiles (--save-graphs DIR), "" for nowhere.
inline std::string saved_graphs_dir;

/// Compiles `g`'s plan into `e`; with --save-graphs, also writes `g` as DIR/<app>_<n>.json (its
/// kernels are then `kiln precompile DIR/*.json` away on any machine).
inline void compile(kiln::Engine& e, const kiln::Graph& g) {
  static int saved = 0;
  if (!saved_graphs_dir.empty()) g.save(fmt::format("{}/graph_{}.json", saved_graphs_dir, saved++));
  kiln::Plan(g).compile(e);
}

/// An engine that compiles for `arch` without a GPU.
inline kiln::Engine offline_engine(const std::string& arch) {
  kiln::EngineOptions o;
  o.offline = true;
  o.arch = arch;
  return kiln::Engine(o);
}

/// Each kernel `e` holds (its name, where it came from, its compile time), then the compiles.
inline int print_kernels(const kiln::Engine& e) {
  for (const kiln::KernelRecord& k : e.kernels())
    fmt::print("{:<48} {:<9} {:>7.1f} ms\n", k.name, k.source, k.compile_ms);
  fmt::print("compiles: {}\n", e.counters().compiles);
  return 0;
}

/// A seed app's main: `app` (with the app's own options) gets --arch and --offline; without a
/// GPU, or with --offline, `offline(arch)` compiles its kernels; else `gpu(engine)` runs it and
/// the engine's compile count is printed. A kiln::Error is one line on stderr, exit 1.
inline int run_main(CLI::App& app, int argc, char** argv,
                    const std::function<int(const std::string&)>& offline,
                    const std::function<int(kiln::Engine&)>& gpu) {
  std::string arch = "sm_90a";
  bool compile_only = false;
  app.add_option("--arch", arch, "Target arch when compiling offline");
  app.add_flag("--offline", compile_only,
               "Only compile (for --arch) into the cache; no GPU needed");
  if (!app.get_option_no_throw("--save-graphs"))
    app.add_option("--save-graphs", saved_graphs_dir,
                   "With --offline, also write each graph compiled to DIR/graph_N.json");
  CLI11_PARSE(app, argc, argv);
  try {
    std::string why;
    if (!compile_only && !kiln::gpu_available(&why)) {
      fmt::print("no GPU here ({}); compiling the kernels for {} instead\n", why, arch);
      compile_only = true;
    }
    if (compile_only) return offline(arch);
    kiln::Engine e;
    const int status = gpu(e);
    fmt::print("compiles: {}\n", e.counters().compiles);
    return status;
  } catch (const kiln::Error& e) {
    fmt::print(stderr, "{}: {}\n", app.get_name(), e.what());
    return 1;
  }
}

}  // namespace seed_app
