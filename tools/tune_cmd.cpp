// kiln tune G.json... [--budget-s N]            tune the plans' kernels on this machine's GPU
// kiln tune --export FILE [--gpu NAME]           write one GPU's tuning records to FILE
// kiln tune --import FILE                        merge records from FILE into the cache directory
// Records belong to one GPU name: importing another GPU's keeps them in that GPU's file, where
// they are never applied to this one.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <kiln/error.hpp>

#include "cache/atomic_file.hpp"
#include "cache/disk_cache.hpp"
#include "cache/tuning.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/runtime/context.hpp"
#include "engine/runtime/driver.hpp"
#include "engine/tune/tuner.hpp"
#include "tools/commands.hpp"
#include "tools/report.hpp"

namespace kiln::tools {
namespace {

struct TuneArgs {
  std::vector<std::string> graphs;
  double budget_s = 0;  ///< 0: not given (no budget)
  bool budget_given = false;
  std::string export_file;
  std::string import_file;
  std::string gpu;
};

// This machine's GPU name, or "" (with the reason, its first clause, in `why`) when it has none.
std::string local_gpu(std::string* why) {
  if (!runtime::device_available(why)) {
    *why = why->substr(0, why->find(':'));
    return "";
  }
  runtime::Context ctx(0);
  return ctx.info().name;
}

int run_import(const TuneArgs& a, const std::string& dir) {
  std::string text, why;
  if (!cache::read_file(a.import_file, text, why))
    throw ArgumentError(fmt::format("--import {}: cannot read it: {}", a.import_file, why));
  const auto incoming = cache::TuningDb::parse(text, a.import_file);
  cache::TuningDb db = cache::TuningDb::load(dir, incoming.gpu());
  const int changed = db.merge(incoming);
  db.save(dir);
  fmt::print("tune: imported {} records of '{}' ({} new or faster) into {}\n",
             incoming.records().size(), incoming.gpu(), changed,
             cache::TuningDb::path(dir, incoming.gpu()));
  const std::string here = local_gpu(&why);
  if (here != incoming.gpu())
    fmt::print("tune: not applied on this machine ({}): records apply only on a '{}'\n",
               here.empty() ? "no GPU here" : "its GPU is '" + here + "'", incoming.gpu());
  return 0;
}

int run_export(const TuneArgs& a, const std::string& dir) {
  std::string why;
  const std::string gpu = a.gpu.empty() ? local_gpu(&why) : a.gpu;
  if (gpu.empty())
    throw ArgumentError(
        fmt::format("--export: no GPU here to name the records ({}); pass --gpu NAME "
                    "(the GPUs with records: the files in {}/tuning)",
                    why, dir));
  const cache::TuningDb db = cache::TuningDb::load(dir, gpu);
  if (db.records().empty())
    throw ArgumentError(fmt::format(
        "--export: no tuning records of '{}' in {} (tune there first: kiln tune G.json)", gpu,
        dir));
  cache::write_file_atomically(a.export_file, db.to_json(), 0644, "tuning export");
  fmt::print("tune: exported {} records of '{}' to {}\n", db.records().size(), gpu, a.export_file);
  return 0;
}

// One line per kernel: a bar on a terminal (rewritten per candidate), plain lines in a log.
class Progress {
 public:
  explicit Progress(int kernels) : kernels_(kernels), tty_(isatty(STDERR_FILENO)) {}
  void operator()(const std::string& kernel, int candidate, int candidates) {
    if (candidate == 0) ++kernel_;
    if (!tty_ && candidate != 0) return;
    const int width = 20, filled = width * (candidate + 1) / std::max(candidates, 1);
    fmt::print(stderr, "{}tune [{}/{}] [{}{}] {}/{} {}{}", tty_ ? "\r\033[K" : "", kernel_,
               kernels_, std::string(std::size_t(filled), '#'),
               std::string(std::size_t(width - filled), '.'), candidate + 1, candidates, kernel,
               tty_ ? "" : "\n");
    std::fflush(stderr);
  }
  void done() const {
    if (tty_ && kernel_) fmt::print(stderr, "\n");
  }

 private:
  int kernels_, kernel_ = 0;
  bool tty_;
};

int run_tune(const TuneArgs& a, const std::string& dir) {
  if (a.budget_given && !(a.budget_s > 0 && std::isfinite(a.budget_s)))
    throw ArgumentError(fmt::format(
        "--budget-s {}: a number of seconds above 0 (leave it out for no budget)", a.budget_s));
  if (!a.export_file.empty() && !a.import_file.empty())
    throw ArgumentError("--export and --import: give one of them");
  if (!a.import_file.empty()) return run_import(a, dir);
  if (!a.export_file.empty()) return run_export(a, dir);
  if (a.graphs.empty())
    throw ArgumentError("nothing to tune: give graph files (or --export/--import FILE)");
  std::vector<Graph> graphs;
  int kernels = 0;
  for (const std::string& path : a.graphs) {  // a bad file says so before any GPU work
    if (path.size() < 5 || path.compare(path.size() - 5, 5, ".json") != 0)
      throw ArgumentError(fmt::format(
          "{}: not a graph file (*.json); a manifest lists compiled kernels, not the graphs "
          "that made them, so their candidates cannot be built: tune the graphs",
          path));
    graphs.push_back(Graph::load(path));
    kernels += int(naming_file(path, [&] { return plan_specs(graphs.back()); }).size());
  }
  std::string why;
  if (local_gpu(&why).empty())
    throw CudaError(
        -1, "kiln tune", "no GPU",
        fmt::format(
            "tune: no GPU here ({}) to time the {} kernels: tuning times kernels on the GPU that "
            "will run "
            "them; run it there, then ship the records with `kiln tune --export` / `--import`",
            why, kernels));
  EngineOptions eo;
  eo.cache_dir = dir;
  Engine engine(eo);
  cache::TuningDb db = cache::TuningDb::load(dir, engine.device_name());
  autotune::TuneOptions to;
  if (a.budget_s > 0)
    to.deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(std::int64_t(a.budget_s * 1e3));
  Progress progress(kernels);
  to.progress = [&](const std::string& k, int c, int n) { progress(k, c, n); };
  to.done = [&](const autotune::KernelTuning& t) {
    progress.done();
    for (const std::string& line : t.result.log) fmt::print("{}: {}\n", t.kernel, line);
  };
  const std::vector<autotune::KernelTuning> all =
      autotune::tune_and_record(engine, graphs, to, db, dir);
  fmt::print("\n{:<48} {:>5} {:>11} {:>11} {:>7}  {}\n", "kernel", "cands", "default us",
             "tuned us", "speedup", "winner");
  int tuned = 0;
  for (const autotune::KernelTuning& t : all) {
    if (!t.skipped.empty()) {
      fmt::print("{:<48} {:>5}  skipped: {}\n", t.kernel, t.candidates, t.skipped);
      continue;
    }
    ++tuned;
    fmt::print("{:<48} {:>5} {:>11.2f} {:>11.2f} {:>6.2f}x  {}\n", t.kernel, t.candidates,
               t.result.default_us, t.result.winner_us, t.result.default_us / t.result.winner_us,
               autotune::describe(t.result.winner));
  }
  fmt::print("tune: {} tuned on '{}'; records in {}\n", counted(std::size_t(tuned), "kernel"),
             engine.device_name(), cache::TuningDb::path(dir, engine.device_name()));
  return 0;
}

}  // namespace

void add_tune(CLI::App& app, Command& run, const Globals& g) {
  auto args = std::make_shared<TuneArgs>();
  auto* cmd = app.add_subcommand(
      "tune", "Pick the fastest template parameters per kernel on this GPU; ship records");
  cmd->add_option("graphs", args->graphs, "Graph files (*.json) whose kernels to tune");
  auto* budget =
      cmd->add_option("--budget-s", args->budget_s,
                      "Start no kernel after this many seconds (the rest keep their defaults)");
  cmd->add_option("--export", args->export_file,
                  "Write the tuning records of one GPU (this one, or --gpu) to FILE");
  cmd->add_option("--import", args->import_file,
                  "Merge tuning records from FILE (a --export file)");
  cmd->add_option("--gpu", args->gpu, "GPU name for --export (default: this machine's)");
  cmd->callback([args, budget, &run, &g] {
    args->budget_given = budget->count() > 0;
    run = [args, &g] { return run_tune(*args, g.dir()); };
  });
}

}  // namespace kiln::tools
