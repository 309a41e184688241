// The kiln command-line tool: device and cache inspection. Logic lives in the library.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <ctime>
#include <iostream>

#include <kiln/kiln.hpp>

#include "cache/disk_cache.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/runtime/context.hpp"
#include "engine/runtime/driver.hpp"

namespace {

std::string age(std::int64_t t) {
  const std::int64_t s = std::int64_t(std::time(nullptr)) - t;
  if (s < 120) return fmt::format("{}s", s);
  if (s < 7200) return fmt::format("{}m", s / 60);
  if (s < 172800) return fmt::format("{}h", s / 3600);
  return fmt::format("{}d", s / 86400);
}

int info() {
  fmt::print("kiln {}\nNVRTC {}\n", KILN_VERSION, kiln::compiler::nvrtc_version());
  std::string why;
  if (kiln::runtime::device_available(&why)) {
    int count = 0, version = 0;
    kiln::runtime::driver().cuDeviceGetCount(&count);
    kiln::runtime::driver().cuDriverGetVersion(&version);
    fmt::print("driver: CUDA {}.{}\n", version / 1000, version % 1000 / 10);
    for (int i = 0; i < count; ++i) {
      kiln::runtime::Context ctx(i);
      const auto& d = ctx.info();
      fmt::print("device {}: {} ({}, {} SMs, {:.1f} GiB)\n", i, d.name, d.arch(), d.sm_count,
                 double(d.total_memory) / (1 << 30));
    }
  } else {
    fmt::print("devices: none ({})\n", why);
  }
  try {
    fmt::print("cache: {}\n", kiln::cache::default_cache_dir());
  } catch (const kiln::Error& e) {
    fmt::print("cache: none ({})\n", e.what());
  }
  return 0;
}

int cache_ls(const kiln::cache::DiskCache& c) {
  auto entries = c.list();
  fmt::print("{:<34} {:<36} {:<8} {:>9} {:>5}  {}\n", "key", "kernel", "arch", "bytes", "age", "status");
  std::uint64_t total = 0;
  for (auto& e : entries) {
    total += e.bytes;
    fmt::print("{:<34} {:<36} {:<8} {:>9} {:>5}  {}\n", e.key, e.kernel.empty() ? "-" : e.kernel,
               e.arch.empty() ? "-" : e.arch, e.bytes, age(e.modified), e.problem.empty() ? "ok" : e.problem);
  }
  fmt::print("{} entries, {} bytes in {}\n", entries.size(), total, c.dir());
  return 0;
}

int cache_verify(const kiln::cache::DiskCache& c) {
  int bad = 0;
  auto entries = c.list();
  for (auto& e : entries) {
    if (e.problem.empty()) continue;
    ++bad;
    const auto key = kiln::cache::CacheKey::parse(e.key);
    if (key) c.load(*key);  // load removes a bad entry
    else std::remove(e.path.c_str());
    fmt::print("bad: {}: {} (removed)\n", e.path, e.problem);
  }
  fmt::print("{} entries checked, {} bad\n", entries.size(), bad);
  return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kiln: a JIT kernel engine for NVIDIA GPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", KILN_VERSION);
  auto* info_cmd = app.add_subcommand("info", "Show devices, NVRTC version and cache directory");
  auto* cache_cmd = app.add_subcommand("cache", "Inspect and manage the kernel cache");
  std::string dir;
  cache_cmd->add_option("--dir", dir, "Cache directory (default: $KILN_CACHE_DIR, ~/.cache/kiln)");
  cache_cmd->require_subcommand(1);
  auto* ls = cache_cmd->add_subcommand("ls", "List entries: kernel, arch, size, age, status");
  auto* verify = cache_cmd->add_subcommand("verify", "Check every entry; remove bad ones (exit 1 if any)");
  auto* clear = cache_cmd->add_subcommand("clear", "Remove every entry");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*info_cmd) return info();
    const kiln::cache::DiskCache cache(dir.empty() ? kiln::cache::default_cache_dir() : dir);
    if (*ls) return cache_ls(cache);
    if (*verify) return cache_verify(cache);
    if (*clear) {
      fmt::print("removed {} files from {}\n", cache.clear(), cache.dir());
      return 0;
    }
  } catch (const kiln::Error& e) {
    std::cerr << "kiln: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
