#pragma once
// The kiln CLI's subcommands. Each registers its options on the app and returns the function
// that runs it (exit code). Logic lives in the library; these parse, call and print.

#include <CLI/CLI.hpp>
#include <functional>
#include <kiln/engine.hpp>
#include <string>
#include <vector>

#include "cache/disk_cache.hpp"
#include "engine/exec/precompile.hpp"

namespace kiln::tools {

using Command = std::function<int()>;

/// What every command shares: the global options, given before or after the subcommand.
struct Globals {
  std::string cache_dir;  ///< --cache-dir; empty: $KILN_CACHE_DIR, else the XDG/home default
  /// The cache directory in use.
  std::string dir() const;
  /// Options of an engine on that directory.
  EngineOptions engine_options() const;
};

void add_info(CLI::App& app, Command& run, const Globals& g);
void add_cache(CLI::App& app, Command& run, const Globals& g);
void add_precompile(CLI::App& app, Command& run, const Globals& g);
void add_graph_commands(CLI::App& app, Command& run, const Globals& g);
void add_tune(CLI::App& app, Command& run, const Globals& g);
void add_bench(CLI::App& app, Command& run, const Globals& g);

/// `kiln cache explain`: for each kernel of a manifest or graph, a hit or why it missed (and a
/// graph's tuning records); exit 1 if any missed. `arch` empty: this machine's GPU's.
int cache_explain(const cache::DiskCache& c, const std::string& path, std::string arch);

/// What `kiln precompile FILES --arch ARCHS` compiles: a graph's kernels as planned for each
/// arch, a manifest's for every arch; each (spec, arch) once. ArgumentError for a file with none.
std::vector<PrecompileWork> precompile_work_of(const std::vector<std::string>& files,
                                               const std::vector<std::string>& archs);

/// `kiln cache push [--arch A,...]`: the verified entries of `c` to the remote cache.
int cache_push(const cache::DiskCache& c, const std::string& archs);
/// `kiln cache pull FILES --arch A,...`: the kernels of manifests or graphs from the remote cache
/// into the disk cache `dir`, in one round trip.
int cache_pull(const std::string& dir, const std::vector<std::string>& files,
               const std::string& archs);
/// The remote layer's line of `kiln cache stats`: its counts kept in `dir`, and its server.
void print_remote_stats(const std::string& dir);

/// "sm_80,sm_90a" -> {"sm_80", "sm_90a"}.
std::vector<std::string> split_list(const std::string& s, char sep = ',');

/// The archs of option `option` ("--arch"): at least one, each one NVRTC can target
/// (ArgumentError naming the option otherwise).
std::vector<std::string> arch_list(const std::string& s, const char* option = "--arch");

/// Whether a plan fuses: not with --no-fuse, nor with KILN_DISABLE_FUSION=1.
bool fuse_ops(bool no_fuse);

}  // namespace kiln::tools
