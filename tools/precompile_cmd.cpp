// kiln precompile MANIFEST --arch sm_80,sm_90a [-j N] [--shard I/N] [--json]
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <set>

#include <kiln/error.hpp>

#include "cache/disk_cache.hpp"
#include "cache/manifest.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/fusion.hpp"
#include "engine/precompile.hpp"
#include "tools/commands.hpp"

namespace kiln::tools {
namespace {

struct PrecompileArgs {
  std::string manifest;
  std::string archs = "sm_80,sm_90a";
  int jobs = 0;
  std::string shard;
  std::string dir;
  bool json = false;
};

void parse_shard(const std::string& s, PrecompileOptions& o) {
  if (s.empty()) return;
  int i = -1, n = -1;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%d/%d%c", &i, &n, &tail) != 2)
    throw ArgumentError(fmt::format("--shard '{}': expected I/N, e.g. 0/4", s));
  o.shard_index = i;
  o.shard_count = n;
}

// A manifest's specs, or a graph's for each arch (a long row is split between blocks on sm_90
// and later): their union, each compiled for every arch (a split kernel compiles for sm_80
// into one that is never launched there), so that any arch finds its own.
std::vector<KernelSpec> specs_of(const std::string& path, const std::vector<std::string>& archs) {
  std::vector<KernelSpec> specs;
  std::set<std::string> seen;
  for (const std::string& arch : archs)
    for (KernelSpec& spec : load_specs(path, nullptr, arch))
      if (seen.insert(compiler::spec_id(spec)).second) specs.push_back(std::move(spec));
  return specs;
}

int run_precompile(const PrecompileArgs& a) {
  PrecompileOptions o;
  o.archs = split_list(a.archs);
  const std::vector<KernelSpec> specs = specs_of(a.manifest, o.archs);
  o.jobs = a.jobs;
  parse_shard(a.shard, o);
  cache::KernelCacheOptions co;
  co.dir = a.dir.empty() ? cache::default_cache_dir() : a.dir;
  co.max_bytes = cache::default_max_bytes();
  cache::KernelCache cache(co);
  const bool tty = ::isatty(STDERR_FILENO);
  const auto summary = precompile_specs(specs, o, cache, [&](int done, int total, const PrecompileItem& item) {
    if (tty) {
      const int width = 30, filled = total ? done * width / total : width;
      std::fprintf(stderr, "\r[%s%s] %d/%d %-40.40s", std::string(filled, '#').c_str(),
                   std::string(width - filled, '.').c_str(), done, total, (item.name + " " + item.arch).c_str());
      if (done == total) std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr, "precompile: [%d/%d] %s %s for %s (%.0f ms)%s%s\n", done, total, item.status.c_str(),
                   item.name.c_str(), item.arch.c_str(), item.ms, item.error.empty() ? "" : ": ", item.error.c_str());
    }
  });
  for (const auto& f : summary.failures) fmt::print(stderr, "failed: {} for {}: {}\n", f.name, f.arch, f.error);
  fmt::print("precompile: {} compiled, {} already cached, {} failed, {} total in {:.1f} s ({} specs x {} archs, shard {}/{}) into {}\n",
             summary.compiled, summary.cached, summary.failed, summary.total, summary.seconds, specs.size(),
             o.archs.size(), o.shard_index, o.shard_count, cache.describe());
  if (a.json)
    fmt::print("{{\"compiled\": {}, \"cached\": {}, \"failed\": {}, \"seconds\": {:.3f}}}\n", summary.compiled,
               summary.cached, summary.failed, summary.seconds);
  return summary.failed ? 1 : 0;
}

}  // namespace

void add_precompile(CLI::App& app, Command& run) {
  auto args = std::make_shared<PrecompileArgs>();
  auto* cmd = app.add_subcommand("precompile", "Compile the kernels of a manifest or graph for some archs, without a GPU");
  cmd->add_option("manifest", args->manifest, "Manifest written with KILN_RECORD, or a graph file (*.json)")->required();
  cmd->add_option("--arch", args->archs, "Target archs, comma-separated")->capture_default_str();
  cmd->add_option("-j,--jobs", args->jobs, "Parallel NVRTC programs (default: one per core)");
  cmd->add_option("--shard", args->shard, "Compile only share I of N (0 <= I < N), for build farms");
  cmd->add_option("--cache-dir", args->dir, "Cache directory (default: $KILN_CACHE_DIR, else ~/.cache/kiln)");
  cmd->add_flag("--json", args->json, "End with the summary as one JSON object");
  cmd->callback([args, &run] { run = [args] { return run_precompile(*args); }; });
}

}  // namespace kiln::tools
