// kiln cache ls | stats | verify | gc | clear | pack | explain | push | pull
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <kiln/error.hpp>
#include <map>

#include "cache/bundle.hpp"
#include "cache/disk_cache.hpp"
#include "cache/manifest.hpp"
#include "cache/stats.hpp"
#include "tools/commands.hpp"

namespace kiln::tools {
namespace {

struct CacheArgs {
  std::string max_bytes;
  std::string out;
  std::string archs;
  std::vector<std::string> merge;
  std::string manifest;
  std::string arch;
  std::vector<std::string> files;  ///< pull's manifests or graphs
};

// Appended to a command's summary where the directory is missing (it is never created to read).
std::string missing(const cache::DiskCache& c) {
  return c.exists() ? "" : " (it does not exist: nothing was cached there)";
}

// The error of a command that could not remove `n` files, as a directory that cannot be written
// leaves them; its summary line already said what it did remove.
CacheError not_removed(std::size_t n, const std::string& what, const cache::DiskCache& c,
                       const std::string& why) {
  return CacheError(fmt::format(
      "could not remove {} {} from {} ({}); make it writable (its mode, `lsattr -d`, a read-only "
      "mount) and run this again",
      n, what, c.dir(), why));
}

std::string age(std::int64_t t) {
  const std::int64_t s = std::max<std::int64_t>(0, std::int64_t(std::time(nullptr)) - t);
  if (s < 120) return fmt::format("{}s", s);
  if (s < 7200) return fmt::format("{}m", s / 60);
  if (s < 172800) return fmt::format("{}h", s / 3600);
  return fmt::format("{}d", s / 86400);
}

int ls(const cache::DiskCache& c) {
  auto entries = c.list();
  fmt::print("{:<32}  {:<30} {:<7} {:>9} {:>8}  {}\n", "key", "kernel", "arch", "bytes", "last use",
             "status");
  std::uint64_t total = 0;
  for (auto& e : entries) {
    total += e.bytes;
    fmt::print("{:<32}  {:<30} {:<7} {:>9} {:>8}  {}\n", e.key, e.kernel ? e.kernel->name : "-",
               e.kernel ? e.kernel->arch : "-", e.bytes, age(e.last_use),
               e.problem.empty() ? "ok" : e.problem);
  }
  fmt::print("{} entries, {} bytes in {}{}\n", entries.size(), total, c.dir(), missing(c));
  return 0;
}

int stats(const cache::DiskCache& c) {
  std::map<std::string, std::pair<int, std::uint64_t>> by_arch;
  int bad = 0;
  std::uint64_t total = 0;
  const auto entries = c.list();
  for (auto& e : entries) {
    total += e.bytes;
    if (!e.kernel) ++bad;
    auto& a = by_arch[e.kernel ? e.kernel->arch : "(bad)"];
    ++a.first;
    a.second += e.bytes;
  }
  fmt::print("cache {}: {} in {} entries (cap: {}){}\n", c.dir(), cache::human_bytes(total),
             entries.size(), cache::describe_cap(cache::default_max_bytes()), missing(c));
  for (auto& [arch, v] : by_arch)
    fmt::print("  {:<8} {:>6} entries {:>12}\n", arch, v.first, cache::human_bytes(v.second));
  fmt::print("  bad entries now: {}\n", bad);
  const cache::DirStats s = cache::read_stats(c.dir());
  const std::uint64_t hits = s.disk_hits + s.bundle_hits, lookups = hits + s.misses;
  fmt::print(
      "  kept across processes: {} hits ({} disk, {} bundle), {} misses ({:.1f} % hits), {} "
      "compiles, "
      "{} bad entries removed\n",
      hits, s.disk_hits, s.bundle_hits, s.misses,
      lookups ? 100.0 * double(hits) / double(lookups) : 0.0, s.compiles, s.bad_entries);
  print_remote_stats(c.dir());
  return 0;
}

// Removes a bad entry that list() found; returns why it is still there (empty: it is gone).
std::string remove_bad(const cache::DiskCache& c, const cache::EntryInfo& e) {
  if (const auto key = cache::CacheKey::parse(e.key)) {
    const auto r = c.load(*key);  // removes a bad entry, unless a good one replaced it meanwhile
    return r.status == cache::DiskCache::Status::refused ? r.problem : r.stays;
  }
  return ::unlink(e.path.c_str()) == 0 || errno == ENOENT ? "" : std::strerror(errno);
}

int verify(const cache::DiskCache& c) {
  int bad = 0;
  std::size_t left = 0;
  std::string why;
  auto entries = c.list();
  for (auto& e : entries) {
    if (e.problem.empty()) continue;
    ++bad;
    const std::string stays = remove_bad(c, e);
    fmt::print("bad: {}: {} ({})\n", e.path, e.problem,
               stays.empty() ? "removed" : "not removed: " + stays);
    if (!stays.empty() && left++ == 0) why = stays;
  }
  fmt::print("{} entries checked, {} bad{}\n", entries.size(), bad, missing(c));
  std::fflush(stdout);
  if (left) throw not_removed(left, left == 1 ? "bad entry" : "bad entries", c, why);
  return bad ? 1 : 0;
}

int gc(const cache::DiskCache& c, const std::string& max_bytes) {
  const std::uint64_t cap =
      max_bytes.empty() ? cache::default_max_bytes() : cache::parse_size(max_bytes, "--max-bytes");
  const auto r = c.gc(cap);
  fmt::print("removed {} files ({}); {} remain (cap: {}){}\n", r.removed,
             cache::human_bytes(r.removed_bytes), cache::human_bytes(r.kept_bytes),
             cache::describe_cap(cap), missing(c));
  std::fflush(stdout);
  if (r.failed) throw not_removed(r.failed, r.failed == 1 ? "entry" : "entries", c, r.failure);
  return 0;
}

int clear(const cache::DiskCache& c) {
  const auto r = c.clear();
  fmt::print("removed {} files from {}{}\n", r.removed, c.dir(), missing(c));
  std::fflush(stdout);
  if (r.failed) throw not_removed(r.failed, r.failed == 1 ? "file" : "files", c, r.failure);
  return 0;
}

int pack(const cache::DiskCache* c, const CacheArgs& a) {
  std::vector<cache::BundleItem> items;
  const auto archs = split_list(a.archs);
  auto wanted = [&](const std::string& arch) {
    return archs.empty() || std::find(archs.begin(), archs.end(), arch) != archs.end();
  };
  if (!a.merge.empty()) {
    for (const std::string& path : a.merge) {
      const cache::Bundle b = cache::Bundle::open(path);
      for (auto& item : b.items())
        if (wanted(item.kernel.arch)) items.push_back(item);
    }
  } else {
    for (auto& e : c->list())
      if (e.kernel && wanted(e.kernel->arch))
        items.push_back({*cache::CacheKey::parse(e.key), *e.kernel});
  }
  if (items.empty())
    throw ArgumentError(fmt::format(
        "nothing to pack: no verified entries{} in {}; precompile first (kiln precompile)",
        archs.empty() ? "" : fmt::format(" for {}", fmt::join(archs, ", ")),
        a.merge.empty() ? c->dir() : fmt::format("{}", fmt::join(a.merge, ", "))));
  cache::write_bundle(a.out, items);
  fmt::print("wrote {} with {} kernels\n", a.out, cache::Bundle::open(a.out).items().size());
  return 0;
}

}  // namespace

void add_cache(CLI::App& app, Command& run, const Globals& g) {
  auto args = std::make_shared<CacheArgs>();
  auto* cmd = app.add_subcommand("cache", "Inspect and manage the kernel cache");
  cmd->require_subcommand(1);
  auto* ls_cmd = cmd->add_subcommand("ls", "List entries: kernel, arch, size, last use, status");
  auto* stats_cmd =
      cmd->add_subcommand("stats", "Entries and bytes per arch, bad entries, the size cap");
  auto* verify_cmd =
      cmd->add_subcommand("verify", "Check every entry; remove bad ones (exit 1 if any)");
  auto* gc_cmd = cmd->add_subcommand("gc", "Apply the size cap now (least recently used go first)");
  gc_cmd->add_option(
      "--max-bytes", args->max_bytes,
      "Cap: bytes, or with K/M/G/T; 0 = no cap (default: $KILN_CACHE_MAX_BYTES, else 2G)");
  auto* clear_cmd = cmd->add_subcommand("clear", "Remove every entry");
  auto* pack_cmd = cmd->add_subcommand("pack", "Write entries into one read-only bundle file");
  pack_cmd->add_option("out", args->out, "Bundle to write (or -o)");
  pack_cmd->add_option("-o,--output", args->out, "Bundle to write");
  pack_cmd->add_option("--arch", args->archs, "Only these archs (comma-separated)");
  pack_cmd
      ->add_option("--merge", args->merge,
                   "Join these bundles (verifying each entry) instead of the cache")
      ->expected(1, -1);
  auto* explain_cmd = cmd->add_subcommand(
      "explain", "For each kernel of a manifest or graph: hit, or why it missed");
  explain_cmd
      ->add_option("manifest", args->manifest,
                   "Manifest (KILN_RECORD output) or graph file (*.json)")
      ->required();
  explain_cmd->add_option("--arch", args->arch, "Arch to look up (default: this machine's GPU)");
  auto* push_cmd = cmd->add_subcommand(
      "push", "Publish the verified entries to the fleet's remote cache (KILN_REMOTE_CACHE)");
  push_cmd->add_option("--arch", args->archs, "Only these archs (comma-separated)");
  auto* pull_cmd = cmd->add_subcommand(
      "pull", "Fetch the kernels of manifests or graphs from the remote cache into this one");
  pull_cmd->add_option("files", args->files, "Manifests (KILN_RECORD output) or graphs (*.json)")
      ->required();
  pull_cmd->add_option("--arch", args->arch, "Archs to fetch, comma-separated")->required();

  cmd->callback([=, &run, &g] {
    run = [=, &g]() -> int {
      const std::string dir = g.dir();
      if (*pack_cmd && args->out.empty())
        throw ArgumentError("pack needs an output file (kiln cache pack OUT.kbundle)");
      if (*pack_cmd && !args->merge.empty()) return pack(nullptr, *args);
      if (*pull_cmd) return cache_pull(dir, args->files, args->arch);
      const cache::DiskCache c = cache::DiskCache::open_existing(dir);
      if (*push_cmd) return cache_push(c, args->archs);
      if (*ls_cmd) return ls(c);
      if (*stats_cmd) return stats(c);
      if (*verify_cmd) return verify(c);
      if (*pack_cmd) return pack(&c, *args);
      if (*explain_cmd) return cache_explain(c, args->manifest, args->arch);
      if (*gc_cmd) return gc(c, args->max_bytes);
      if (*clear_cmd) return clear(c);
      return 0;
    };
  });
}

}  // namespace kiln::tools
