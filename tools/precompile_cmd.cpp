// kiln precompile FILE... --arch sm_80,sm_90a [-j N] [--shard I/N] [--json]
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <kiln/error.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "cache/disk_cache.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/exec/precompile.hpp"
#include "engine/passes/fusion.hpp"
#include "tools/commands.hpp"
#include "tools/report.hpp"

namespace kiln::tools {
namespace {

struct PrecompileArgs {
  std::vector<std::string> files;
  std::string archs = "sm_80,sm_90a";
  int jobs = 0;  ///< 0: not given (one per core)
  bool jobs_given = false;
  std::string shard;
  bool json = false;
  bool remote = false;  ///< --remote: the fleet's cache must take every kernel
};

void parse_shard(const std::string& s, PrecompileOptions& o) {
  if (s.empty()) return;
  int i = -1, n = -1;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%d/%d%c", &i, &n, &tail) != 2)
    throw ArgumentError(fmt::format("--shard '{}': expected I/N, e.g. 0/4", s));
  if (n < 1 || i < 0 || i >= n)
    throw ArgumentError(fmt::format("--shard {}: bad shard: expected I/N with 0 <= I < N", s));
  o.shard_index = i;
  o.shard_count = n;
}

}  // namespace

// What to compile: a graph's kernels as planned for each arch, for that arch alone (sm_90a's
// wgmma kernels are never compiled for sm_80, nor sm_80's for sm_90a); a manifest's, which
// name no arch, for every arch. Each (spec, arch) once. A file with no kernels is an error:
// precompiling it would ship nothing.
std::vector<PrecompileWork> precompile_work_of(const std::vector<std::string>& files,
                                               const std::vector<std::string>& archs) {
  std::vector<PrecompileWork> work;
  std::set<std::string> seen;
  for (const std::string& path : files) {
    std::size_t found = 0;
    for (const std::string& arch : archs)
      for (KernelSpec& spec : naming_file(path, [&] { return load_specs(path, nullptr, arch); })) {
        ++found;
        const bool graph = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
        for (const std::string& to : archs)
          if ((!graph || to == arch) && seen.insert(compiler::spec_id(spec) + ' ' + to).second)
            work.push_back({spec, to});
      }
    if (found == 0)
      throw ArgumentError(
          fmt::format("{}: no kernels in it (an empty manifest?): nothing to precompile", path));
  }
  return work;
}

namespace {

// The cache precompile writes into, refused up front when it could keep nothing.
cache::KernelCacheOptions writable_cache(const std::string& dir) {
  cache::KernelCacheOptions co = cache::cache_options(
      dir.empty() ? std::nullopt : std::optional<std::string>(dir), true, 0, {});
  if (!co.dir)
    throw CacheError(
        "precompile needs a disk cache to write into, but KILN_DISABLE_DISK_CACHE is set");
  const cache::DiskCache disk(
      *co.dir);  // made if missing; CacheError if it is not a usable directory
  if (::access(disk.dir().c_str(), W_OK) != 0)
    throw CacheError(fmt::format(
        "precompile cannot write into the cache directory {} (not writable); pass a writable "
        "--cache-dir",
        disk.dir()));
  return co;
}

void print_progress(int done, int total, const PrecompileItem& item) {
  if (::isatty(STDERR_FILENO)) {
    const int width = 30, filled = total ? done * width / total : width;
    std::fprintf(stderr, "\r[%s%s] %d/%d %-40.40s", std::string(std::size_t(filled), '#').c_str(),
                 std::string(std::size_t(width - filled), '.').c_str(), done, total,
                 (item.name + " " + item.arch).c_str());
    if (done == total) std::fprintf(stderr, "\n");
  } else {
    std::fprintf(stderr, "precompile: [%d/%d] %s %s for %s (%.0f ms)%s%s\n", done, total,
                 item.status.c_str(), item.name.c_str(), item.arch.c_str(), item.ms,
                 item.error.empty() ? "" : ": ", item.error.c_str());
  }
}

int run_precompile(const PrecompileArgs& a, const std::string& dir) {
  if (a.jobs_given && a.jobs < 1)
    throw ArgumentError(fmt::format(
        "-j {}: the number of parallel compiles is at least 1 (leave -j out for one per core)",
        a.jobs));
  PrecompileOptions o;
  o.archs = arch_list(a.archs);
  o.jobs = a.jobs;
  parse_shard(a.shard, o);
  const std::vector<PrecompileWork> work = precompile_work_of(a.files, o.archs);
  cache::KernelCache cache(writable_cache(dir));
  if (a.remote && !cache.has_remote())
    throw ArgumentError(
        "--remote publishes to the fleet's cache, but KILN_REMOTE_CACHE is not set: set it to "
        "the server (redis://[user:password@]host[:port][/db])");
  o.publish_cached = a.remote;
  const auto summary = precompile_work(work, o, cache, print_progress);
  for (const auto& f : summary.failures)
    fmt::print(stderr, "failed: {} for {}: {}\n{}", f.name, f.arch, f.error,
               f.log.empty() ? "" : log_head(f.message, f.log, f.name));
  // Prose on stderr; with --json, stdout holds the JSON object alone.
  fmt::print(stderr,
             "precompile: {} compiled, {} already cached, {} failed, {} total in {:.1f} s ({} "
             "kernels for {} archs, shard {}/{}) into {}\n",
             summary.compiled, summary.cached, summary.failed, summary.total, summary.seconds,
             work.size(), o.archs.size(), o.shard_index, o.shard_count, cache.describe());
  if (a.json)
    fmt::print("{}\n", nlohmann::json{{"compiled", summary.compiled},
                                      {"cached", summary.cached},
                                      {"failed", summary.failed},
                                      {"total", summary.total},
                                      {"seconds", summary.seconds}}
                           .dump());
  if (a.remote && cache.counters().remote_errors) {
    fmt::print(stderr,
               "precompile: the remote cache {} failed (above), so it may lack kernels; check "
               "it and run this again (kernels on disk are published again)\n",
               cache.remote()->describe());
    return 1;
  }
  return summary.failed ? 1 : 0;
}

}  // namespace

void add_precompile(CLI::App& app, Command& run, const Globals& g) {
  auto args = std::make_shared<PrecompileArgs>();
  auto* cmd = app.add_subcommand(
      "precompile", "Compile the kernels of manifests or graphs for some archs, without a GPU");
  cmd->add_option("files", args->files,
                  "Manifests written with KILN_RECORD, or graph files (*.json)")
      ->required();
  cmd->add_option("--arch", args->archs, "Target archs, comma-separated")->capture_default_str();
  auto* jobs =
      cmd->add_option("-j,--jobs", args->jobs, "Parallel NVRTC programs (default: one per core)");
  cmd->add_option("--shard", args->shard,
                  "Compile only share I of N (0 <= I < N), for build farms");
  cmd->add_flag("--remote", args->remote,
                "Publish every kernel to the fleet's remote cache (KILN_REMOTE_CACHE), those "
                "already on disk too; exit 1 if the remote failed");
  cmd->add_flag("--json", args->json,
                "Print the summary as one JSON object on stdout (progress stays on stderr)");
  cmd->callback([args, jobs, &run, &g] {
    args->jobs_given = jobs->count() > 0;
    run = [args, &g] { return run_precompile(*args, g.cache_dir); };
  });
}

}  // namespace kiln::tools
