#include <fmt/format.h>

#include <cstdlib>
#include <kiln/error.hpp>

#include "cache/bundle.hpp"
#include "cache/disk_cache.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/runtime/context.hpp"
#include "engine/runtime/driver.hpp"
#include "tools/commands.hpp"

namespace kiln::tools {

std::vector<std::string> split_list(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t end = s.find(sep, start);
    std::string part = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!part.empty()) out.push_back(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::vector<std::string> arch_list(const std::string& s, const char* option) {
  std::vector<std::string> archs = split_list(s);
  if (archs.empty())
    throw ArgumentError(
        fmt::format("{} '{}': name one or more archs, e.g. {} sm_80,sm_90a", option, s, option));
  // A list with an empty entry or a repeated one is a typo, not a wish: say so.
  if (s.front() == ',' || s.back() == ',' || s.find(",,") != std::string::npos)
    throw ArgumentError(fmt::format("{} '{}': an empty arch in the list", option, s));
  for (std::size_t i = 0; i < archs.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (archs[i] == archs[j])
        throw ArgumentError(fmt::format("{} '{}': {} is named twice", option, s, archs[i]));
  for (const std::string& arch : archs) {
    try {
      compiler::target_options(arch);
    } catch (const Error& e) {
      throw ArgumentError(fmt::format("{} {}: {}", option, arch, e.what()));
    }
  }
  return archs;
}

bool fuse_ops(bool no_fuse) { return !no_fuse && fusion_enabled(); }

std::string Globals::dir() const {
  return cache_dir.empty() ? cache::default_cache_dir() : cache_dir;
}

EngineOptions Globals::engine_options() const {
  EngineOptions o;
  if (!cache_dir.empty()) o.cache_dir = cache_dir;
  return o;
}

void add_info(CLI::App& app, Command& run, const Globals& g) {
  auto* cmd = app.add_subcommand(
      "info", "Show devices, NVRTC and driver versions, cache directory, bundles");
  cmd->callback([&run, &g] {
    run = [&g] {
      fmt::print("kiln {}\nNVRTC {}\n", KILN_VERSION, compiler::nvrtc_version());
      std::string why;
      if (runtime::device_available(&why)) {
        int count = 0, version = 0;
        runtime::driver().cuDeviceGetCount(&count);
        runtime::driver().cuDriverGetVersion(&version);
        fmt::print("driver: CUDA {}.{}\n", version / 1000, version % 1000 / 10);
        for (int i = 0; i < count; ++i) {
          runtime::Context ctx(i);
          const auto& d = ctx.info();
          fmt::print("device {}: {} ({}, {} SMs, {:.1f} GiB)\n", i, d.name, d.arch(), d.sm_count,
                     double(d.total_memory) / (1 << 30));
        }
      } else {
        fmt::print("devices: none ({})\n", why);
      }
      try {
        fmt::print("cache: {} (cap: {})\n", g.dir(),
                   cache::describe_cap(cache::default_max_bytes()));
      } catch (const Error& e) {
        fmt::print("cache: none ({})\n", e.what());
      }
      for (const std::string& b : cache::bundles_from_env()) {
        try {
          fmt::print("bundle: {} ({} kernels)\n", b, cache::Bundle::open(b).items().size());
        } catch (const Error& e) {
          fmt::print("bundle: {} REFUSED: {}\n", b, e.what());
        }
      }
      return 0;
    };
  });
}

}  // namespace kiln::tools
