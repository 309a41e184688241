// kiln bench G.json [--reps N] [--no-fuse] [--json]: each kernel of the plan timed alone (the
// bytes it reads and writes, GB/s), then the whole plan through Plan::run and Plan::replay.
#include <fmt/format.h>

#include <kiln/kiln.hpp>
#include <nlohmann/json.hpp>

#include "engine/tune/tuner.hpp"
#include "tools/commands.hpp"
#include "tools/report.hpp"

namespace kiln::tools {
namespace {

struct BenchArgs {
  std::string graph;
  int reps = 20;
  bool no_fuse = false;
  bool json = false;
};

double gbps(std::int64_t bytes, double us) { return us > 0 ? double(bytes) / us * 1e-3 : 0; }

int bench(const BenchArgs& a, const Globals& globals) {
  if (a.reps < 1) throw ArgumentError(fmt::format("--reps {}: at least 1", a.reps));
  const Graph g = Graph::load(a.graph);
  const bool fuse = fuse_ops(a.no_fuse);
  const Plan check(g, fuse);  // a graph that cannot be planned says so before the GPU is looked for
  if (std::string why; !gpu_available(&why))
    throw CudaError(-1, "kiln bench", "no GPU",
                    fmt::format("bench: no GPU here ({}) to time the {} of {}; `kiln plan "
                                "--compile` works without one",
                                why, counted(check.kernels().size(), "kernel"), a.graph));
  Engine e(globals.engine_options());
  autotune::TuneOptions o;
  o.reps = a.reps;
  const std::vector<autotune::KernelTiming> kernels = autotune::time_kernels(e, g, fuse, o);

  // The whole plan on random inputs, into outputs allocated once.
  std::map<std::string, Tensor> held;
  std::map<std::string, TensorView> ins, outs;
  std::int64_t io_bytes = 0;
  for (const auto& n : g.nodes())
    if (n.op == "input") {
      const auto host =
          autotune::random_host(n.dtype, numel_of(n.shape), std::uint64_t(g.find(n.name)) + 1);
      held[n.name] = e.from_host(n.shape, n.dtype, host.data());
      ins[n.name] = held[n.name].view();
      io_bytes += std::int64_t(held[n.name].bytes());
    }
  for (int id : g.outputs()) {
    const auto& n = g.node(id);
    held["out " + n.name] = e.empty(n.shape, n.dtype);
    outs[n.name] = held["out " + n.name].view();
    io_bytes += std::int64_t(held["out " + n.name].bytes());
  }
  const Plan p(g, fuse);
  const double run_us = 1e3 * e.time_median_ms([&] { p.run(e, ins, outs); }, 3, a.reps);
  const double replay_us = 1e3 * e.time_median_ms([&] { p.replay(e, ins, outs); }, 3, a.reps);
  double sum_us = 0;
  for (const auto& k : kernels) sum_us += k.us;

  if (a.json) {
    nlohmann::json out = {{"device", e.device_name()}, {"kernels", nlohmann::json::array()}};
    for (const auto& k : kernels)
      out["kernels"].push_back({{"name", k.kernel},
                                {"ops", k.ops},
                                {"us", k.us},
                                {"bytes", k.bytes},
                                {"gbps", gbps(k.bytes, k.us)}});
    out["plan"] = {{"kernels_us", sum_us},
                   {"run_us", run_us},
                   {"replay_us", replay_us},
                   {"io_bytes", io_bytes},
                   {"replay_gbps", gbps(io_bytes, replay_us)}};
    fmt::print("{}\n", out.dump());
    return 0;
  }
  fmt::print("{} on {}, {} events each (median)\n", a.graph, e.device_name(), a.reps);
  fmt::print("{:<44} {:>10} {:>12} {:>7}  fuses\n", "kernel", "us", "bytes", "GB/s");
  for (const auto& k : kernels)
    fmt::print("{:<44} {:>10.2f} {:>12} {:>7.0f}  {}\n", k.kernel, k.us, k.bytes,
               gbps(k.bytes, k.us), fmt::join(k.ops, " "));
  fmt::print(
      "plan: {}, {:.2f} us alone in sum; Plan::run {:.2f} us, Plan::replay {:.2f} us; "
      "graph inputs and outputs {} bytes ({:.0f} GB/s at replay)\n",
      counted(kernels.size(), "kernel"), sum_us, run_us, replay_us, io_bytes,
      gbps(io_bytes, replay_us));
  return 0;
}

}  // namespace

void add_bench(CLI::App& app, Command& run_cmd, const Globals& g) {
  auto args = std::make_shared<BenchArgs>();
  auto* b = app.add_subcommand(
      "bench", "Time a graph on the GPU: each kernel alone (bytes, GB/s), then the whole plan");
  b->add_option("graph", args->graph, "Graph file (JSON), exact shapes")->required();
  b->add_option("--reps", args->reps, "Timed runs per measurement (the median counts)")
      ->capture_default_str();
  b->add_flag("--no-fuse", args->no_fuse, "One kernel per op (as KILN_DISABLE_FUSION=1)");
  b->add_flag("--json", args->json, "Print one JSON object for scripts");
  b->callback([args, &run_cmd, &g] {
    run_cmd = [args, &g] { return naming_file(args->graph, [&] { return bench(*args, g); }); };
  });
}

}  // namespace kiln::tools
