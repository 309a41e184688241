// kiln tune G.json|MANIFEST [--budget-s N]      tune a plan's kernels on this machine's GPU
// kiln tune --export FILE [--gpu NAME]           write one GPU's tuning records to FILE
// kiln tune --import FILE                        merge records from FILE into the cache directory
// Records belong to one GPU name: importing another GPU's keeps them in that GPU's file, where
// they are never applied to this one.
#include <fmt/format.h>

#include <fstream>
#include <iterator>

#include <kiln/error.hpp>

#include "cache/atomic_file.hpp"
#include "cache/disk_cache.hpp"
#include "cache/tuning.hpp"
#include "engine/fusion.hpp"
#include "engine/runtime/context.hpp"
#include "engine/runtime/driver.hpp"
#include "tools/commands.hpp"

namespace kiln::tools {
namespace {

struct TuneArgs {
  std::string graph;
  double budget_s = 0;
  std::string export_file;
  std::string import_file;
  std::string gpu;
  std::string dir;
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
  std::ifstream in(a.import_file);
  if (!in) throw ArgumentError(fmt::format("--import {}: cannot read it", a.import_file));
  const auto incoming =
      cache::TuningDb::parse(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), a.import_file);
  cache::TuningDb db = cache::TuningDb::load(dir, incoming.gpu());
  const int changed = db.merge(incoming);
  db.save(dir);
  fmt::print("tune: imported {} records of '{}' ({} new or faster) into {}\n", incoming.records().size(), incoming.gpu(),
             changed, cache::TuningDb::path(dir, incoming.gpu()));
  std::string why;
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
    throw ArgumentError(fmt::format("--export: no GPU here to name the records ({}); pass --gpu NAME "
                                    "(the GPUs with records: the files in {}/tuning)", why, dir));
  const cache::TuningDb db = cache::TuningDb::load(dir, gpu);
  if (db.records().empty())
    throw ArgumentError(fmt::format("--export: no tuning records of '{}' in {} (tune there first: kiln tune G.json)", gpu, dir));
  cache::write_file_atomically(a.export_file, db.to_json(), 0644, "tuning export");
  fmt::print("tune: exported {} records of '{}' to {}\n", db.records().size(), gpu, a.export_file);
  return 0;
}

int run_tune(const TuneArgs& a, const std::string& dir) {
  if (!a.export_file.empty() && !a.import_file.empty()) throw ArgumentError("--export and --import: give one of them");
  if (!a.import_file.empty()) return run_import(a, dir);
  if (!a.export_file.empty()) return run_export(a, dir);
  if (a.graph.empty()) throw ArgumentError("nothing to tune: give a graph or manifest (or --export/--import FILE)");
  const std::size_t kernels = load_specs(a.graph).size();  // a bad file says so first
  std::string why;
  if (local_gpu(&why).empty())
    throw CudaError(-1, "kiln tune", "no GPU",
                    fmt::format("tune: no GPU here ({}) to time the {} kernels of {}: tuning times kernels on the GPU that will run them; run it "
                                "there, then ship the records with `kiln tune --export` / `--import`", why, kernels, a.graph));
  throw Error("tune: timing candidates on the GPU is not built yet (issue 5); records can be imported with --import");
}

}  // namespace

void add_tune(CLI::App& app, Command& run) {
  auto args = std::make_shared<TuneArgs>();
  auto* cmd = app.add_subcommand("tune", "Pick the fastest template parameters per kernel on this GPU; ship records");
  cmd->add_option("graph", args->graph, "Graph file (*.json) or manifest whose kernels to tune");
  cmd->add_option("--budget-s", args->budget_s, "Stop tuning after this many seconds");
  cmd->add_option("--export", args->export_file, "Write the tuning records of one GPU (this one, or --gpu) to FILE");
  cmd->add_option("--import", args->import_file, "Merge tuning records from FILE (a --export file)");
  cmd->add_option("--gpu", args->gpu, "GPU name for --export (default: this machine's)");
  cmd->add_option("--cache-dir", args->dir, "Cache directory (default: $KILN_CACHE_DIR, else ~/.cache/kiln)");
  cmd->callback([args, &run] {
    run = [args] { return run_tune(*args, args->dir.empty() ? cache::default_cache_dir() : args->dir); };
  });
}

}  // namespace kiln::tools
