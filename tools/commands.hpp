#pragma once
// The kiln CLI's subcommands. Each registers its options on the app and returns the function
// that runs it (exit code). Logic lives in the library; these parse, call and print.

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "cache/disk_cache.hpp"

namespace kiln::tools {

using Command = std::function<int()>;

void add_info(CLI::App& app, Command& run);
void add_cache(CLI::App& app, Command& run);
void add_precompile(CLI::App& app, Command& run);
void add_graph_commands(CLI::App& app, Command& run);
void add_tune(CLI::App& app, Command& run);
void add_bench(CLI::App& app, Command& run);

/// `kiln cache explain`: for each kernel of a manifest or graph, a hit or why it missed (and a
/// graph's tuning records); exit 1 if any missed. `arch` empty: this machine's GPU's.
int cache_explain(const cache::DiskCache& c, const std::string& path, std::string arch);

/// "sm_80,sm_90a" -> {"sm_80", "sm_90a"}.
std::vector<std::string> split_list(const std::string& s, char sep = ',');

}  // namespace kiln::tools
