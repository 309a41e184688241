// kiln plan G.json [--json] [--compile --arch A] | kiln run G.json --input x=x.npy ... --output-dir
// D
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <kiln/kiln.hpp>
#include <nlohmann/json.hpp>

#include "tools/commands.hpp"
#include "tools/npy.hpp"
#include "tools/report.hpp"

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

int plan(const GraphArgs& a, const Globals& globals) {
  const std::vector<std::string> archs = arch_list(a.archs);
  const Graph g = Graph::load(a.graph);
  const Plan p(g, fuse_ops(a.no_fuse));
  const auto kernels = p.kernels(archs.front());
  std::vector<std::unique_ptr<Engine>>
      engines;  // made first: a bad cache or bundle fails before anything prints
  for (const std::string& arch : a.compile ? archs : std::vector<std::string>{}) {
    EngineOptions o = globals.engine_options();
    o.offline = true;
    o.arch = arch;
    engines.push_back(std::make_unique<Engine>(o));
  }
  if (a.json) {
    nlohmann::json out = {{"kernels", nlohmann::json::array()}};
    for (const auto& k : kernels)
      out["kernels"].push_back(
          {{"name", k.name}, {"ops", k.ops}, {"grid", k.grid}, {"block", k.block}});
    fmt::print("{}\n", out.dump());
  } else {
    bool dynamic = false;  // its grids are the launches': "?"
    for (const auto& n : g.nodes())
      dynamic = dynamic || std::find(n.shape.begin(), n.shape.end(), -1) != n.shape.end();
    const auto shown = [&](unsigned v) {
      return dynamic && v == 0 ? std::string("?") : std::to_string(v);
    };
    for (const auto& k : kernels) {
      std::vector<std::string> ops;
      for (const std::string& op : k.ops) ops.push_back(printable_name(op));
      fmt::print("{:<40} grid {:>7} block {:>4}  fuses {}\n", k.name, shown(k.grid), shown(k.block),
                 fmt::join(ops, " "));
    }
    const auto ops = std::count_if(g.nodes().begin(), g.nodes().end(),
                                   [](const Graph::Node& n) { return n.op != "input"; });
    fmt::print("{} for {}\n", counted(kernels.size(), "kernel"), counted(std::size_t(ops), "node"));
  }
  for (const auto& e : engines)
    for (const auto& r : p.compile(*e))
      fmt::print("compiled {} for {}: {} ({:.1f} ms, {} registers, {} bytes spilled)\n", r.name,
                 e->arch(), r.source, r.compile_ms, r.registers, r.spill_bytes);
  return 0;
}

// The output directory, made if missing (ArgumentError if it cannot be).
void make_output_dir(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    throw ArgumentError(fmt::format("--output-dir {}: it is not a directory", dir));
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw ArgumentError(
        fmt::format("--output-dir {}: cannot create it: {}", dir, std::strerror(errno)));
}

// ShapeError naming `file` unless its array fits input `n` (a dynamic dim fits any extent).
void check_shape(const std::string& file, const Graph::Node& n, const NpyArray& array) {
  bool fits = array.shape.size() == n.shape.size();
  for (std::size_t d = 0; fits && d < n.shape.size(); ++d)
    fits = n.shape[d] < 0 || n.shape[d] == array.shape[d];
  if (!fits)
    throw ShapeError(fmt::format("{}: input '{}': got {}{}, the graph wants {}", file,
                                 printable_name(n.name), name_of(array.dtype),
                                 to_string(array.shape), to_string(n.shape)));
}

int run(const GraphArgs& a, const Globals& globals) {
  const Graph g = Graph::load(a.graph);
  const Plan p = naming_file(a.graph, [&] { return Plan(g, fuse_ops(a.no_fuse)); });
  // Every input file is read and checked against the graph before the GPU is touched.
  std::map<std::string, NpyArray> arrays;
  for (const std::string& spec : a.inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos)
      throw ArgumentError(fmt::format("--input '{}': expected NAME=FILE.npy", spec));
    const std::string name = spec.substr(0, eq);
    const int id = g.find(name);
    if (id < 0 || g.node(id).op != "input")
      throw GraphError(
          fmt::format("--input {}: the graph has no input '{}'", spec, printable_name(name)));
    if (arrays.count(name))
      throw ArgumentError(fmt::format("--input {}: input '{}' is given twice", spec, name));
    const std::string file = spec.substr(eq + 1);
    arrays[name] = read_npy(file, g.node(id).dtype);
    check_shape(file, g.node(id), arrays[name]);
  }
  for (const auto& n : g.nodes())
    if (n.op == "input" && !arrays.count(n.name))
      throw GraphError(
          fmt::format("input '{}' was not given: add --input {}=FILE.npy", n.name, n.name));
  std::map<std::string, TensorView> shapes;
  for (const auto& [name, arr] : arrays) shapes[name] = TensorView{0, arr.shape, {}, arr.dtype};
  p.check(shapes);
  for (int id : g.outputs())
    if (const std::string& name = g.node(id).name;
        name.find('/') != std::string::npos || name == "." || name == "..")
      throw GraphError(
          fmt::format("output '{}' cannot name a file in --output-dir (no '/', '.' or '..'): "
                      "rename it in the graph",
                      printable_name(name)));
  make_output_dir(a.output_dir);
  if (std::string why; !gpu_available(&why))
    throw CudaError(-1, "kiln run", "no GPU",
                    fmt::format("run: no GPU here ({}) to run {}; without one, `kiln plan "
                                "--compile --arch sm_90a {}` or "
                                "`kiln precompile {} --arch sm_80,sm_90a` compile its kernels",
                                why.substr(0, why.find(':')), a.graph, a.graph, a.graph));
  Engine e(globals.engine_options());
  std::map<std::string, Tensor> held;
  std::map<std::string, TensorView> views;
  for (const auto& [name, arr] : arrays) {
    held[name] = e.from_host(arr.shape, arr.dtype, arr.bytes.data());
    views[name] = held[name].view();
  }
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

void add_graph_commands(CLI::App& app, Command& run_cmd, const Globals& g) {
  auto args = std::make_shared<GraphArgs>();
  auto* p = app.add_subcommand(
      "plan", "Print the fused plan of a graph: kernels, the ops each fuses, launch shapes");
  p->add_option("graph", args->graph, "Graph file (JSON)")->required();
  p->add_flag("--json", args->json, "Print {\"kernels\": [...]} for scripts");
  p->add_flag("--compile", args->compile, "Also NVRTC-compile every kernel (no GPU needed)");
  p->add_option("--arch", args->archs, "Archs for --compile, comma-separated")
      ->capture_default_str();
  p->add_flag("--no-fuse", args->no_fuse, "One kernel per op (as KILN_DISABLE_FUSION=1)");
  p->callback([args, &run_cmd, &g] {
    run_cmd = [args, &g] { return naming_file(args->graph, [&] { return plan(*args, g); }); };
  });

  auto* r = app.add_subcommand(
      "run", "Run a graph on the GPU: inputs from .npy files, outputs to DIR/<name>.npy");
  r->add_option("graph", args->graph, "Graph file (JSON)")->required();
  r->add_option("--input", args->inputs,
                "NAME=FILE.npy, one per graph input (bf16 as uint16 bits)");
  r->add_option("--output-dir", args->output_dir, "Where outputs are written")
      ->capture_default_str();
  r->add_flag("--no-fuse", args->no_fuse, "One kernel per op (as KILN_DISABLE_FUSION=1)");
  r->callback([args, &run_cmd, &g] { run_cmd = [args, &g] { return run(*args, g); }; });
}

}  // namespace kiln::tools
