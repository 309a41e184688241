// kiln plan G.json [--json] [--compile --arch A] | kiln run G.json --input x=x.npy ... --output-dir D
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include <kiln/kiln.hpp>

#include "tools/commands.hpp"
#include "tools/npy.hpp"

namespace kiln::tools {
namespace {

struct GraphArgs {
  std::string graph;
  bool json = false;
  bool compile = false;
  bool no_fuse = false;
  std::string archs = "sm_90a";
  std::vector<std::string> inputs;
  std::string output_dir = ".";
};

int plan(const GraphArgs& a) {
  const Graph g = Graph::load(a.graph);
  const Plan p(g, !a.no_fuse);
  const auto kernels = p.kernels(split_list(a.archs).at(0));
  if (a.json) {
    nlohmann::json out = {{"kernels", nlohmann::json::array()}};
    for (const auto& k : kernels) out["kernels"].push_back({{"name", k.name}, {"ops", k.ops}, {"grid", k.grid}, {"block", k.block}});
    fmt::print("{}\n", out.dump());
  } else {
    bool dynamic = false;  // its grids are the launches': "?"
    for (const auto& n : g.nodes()) dynamic = dynamic || std::find(n.shape.begin(), n.shape.end(), -1) != n.shape.end();
    const auto shown = [&](unsigned v) { return dynamic && v == 0 ? std::string("?") : std::to_string(v); };
    for (const auto& k : kernels)
      fmt::print("{:<40} grid {:>7} block {:>4}  fuses {}\n", k.name, shown(k.grid), shown(k.block), fmt::join(k.ops, " "));
    fmt::print("{} kernels for {} nodes\n", kernels.size(), g.nodes().size());
  }
  if (a.compile)
    for (const std::string& arch : split_list(a.archs)) {
      EngineOptions o;
      o.offline = true;
      o.arch = arch;
      Engine e(o);
      for (const auto& r : p.compile(e))
        fmt::print("compiled {} for {}: {} ({:.1f} ms, {} registers, {} bytes spilled)\n", r.name, arch, r.source, r.compile_ms,
                   r.registers, r.spill_bytes);
    }
  return 0;
}

int run(const GraphArgs& a) {
  const Graph g = Graph::load(a.graph);
  const Plan p(g, !a.no_fuse);
  // Every input file is read and checked before the GPU is touched.
  std::map<std::string, NpyArray> arrays;
  for (const std::string& spec : a.inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos) throw ArgumentError(fmt::format("--input '{}': expected NAME=FILE.npy", spec));
    const std::string name = spec.substr(0, eq);
    const int id = g.find(name);
    if (id < 0 || g.node(id).op != "input") throw GraphError(fmt::format("--input {}: the graph has no input '{}'", spec, name));
    arrays[name] = read_npy(spec.substr(eq + 1), g.node(id).dtype);
  }
  for (const auto& n : g.nodes())
    if (n.op == "input" && !arrays.count(n.name))
      throw GraphError(fmt::format("input '{}' was not given: add --input {}=FILE.npy", n.name, n.name));
  Engine e;
  std::map<std::string, Tensor> held;
  std::map<std::string, TensorView> views;
  for (const auto& [name, arr] : arrays) {
    held[name] = e.from_host(arr.shape, arr.dtype, arr.bytes.data());
    views[name] = held[name].view();
  }
  ::mkdir(a.output_dir.c_str(), 0755);
  for (auto& [name, t] : p.run(e, views)) {
    NpyArray out{t.shape(), t.dtype(), std::vector<unsigned char>(t.bytes())};
    t.copy_to_host(out.bytes.data());
    const std::string path = a.output_dir + "/" + name + ".npy";
    write_npy(path, out);
    fmt::print("wrote {} ({}{})\n", path, name_of(t.dtype()), to_string(t.shape()));
  }
  return 0;
}

}  // namespace

void add_graph_commands(CLI::App& app, Command& run_cmd) {
  auto args = std::make_shared<GraphArgs>();
  auto* p = app.add_subcommand("plan", "Print the fused plan of a graph: kernels, the ops each fuses, launch shapes");
  p->add_option("graph", args->graph, "Graph file (JSON)")->required();
  p->add_flag("--json", args->json, "Print {\"kernels\": [...]} for scripts");
  p->add_flag("--compile", args->compile, "Also NVRTC-compile every kernel (no GPU needed)");
  p->add_option("--arch", args->archs, "Archs for --compile, comma-separated")->capture_default_str();
  p->add_flag("--no-fuse", args->no_fuse, "One kernel per op (as KILN_DISABLE_FUSION=1)");
  p->callback([args, &run_cmd] { run_cmd = [args] { return plan(*args); }; });

  auto* r = app.add_subcommand("run", "Run a graph on the GPU: inputs from .npy files, outputs to DIR/<name>.npy");
  r->add_option("graph", args->graph, "Graph file (JSON)")->required();
  r->add_option("--input", args->inputs, "NAME=FILE.npy, one per graph input (bf16 as uint16 bits)");
  r->add_option("--output-dir", args->output_dir, "Where outputs are written")->capture_default_str();
  r->add_flag("--no-fuse", args->no_fuse, "One kernel per op (as KILN_DISABLE_FUSION=1)");
  r->callback([args, &run_cmd] { run_cmd = [args] { return run(*args); }; });
}

}  // namespace kiln::tools
