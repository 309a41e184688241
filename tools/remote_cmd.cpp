// kiln cache push [--arch A,...] | kiln cache pull FILES --arch A,... and the remote line of
// kiln cache stats: the local cache and the fleet's remote one (KILN_REMOTE_CACHE).
#include <fmt/format.h>

#include <algorithm>
#include <kiln/error.hpp>

#include "cache/kernel_cache.hpp"
#include "cache/remote.hpp"
#include "cache/stats.hpp"
#include "engine/compiler/compiler.hpp"
#include "tools/commands.hpp"

namespace kiln::tools {
namespace {

// The remote of $KILN_REMOTE_CACHE; ArgumentError naming `command` where it is not set.
cache::RemoteSettings required_remote(const char* command) {
  std::optional<cache::RemoteSettings> s = cache::remote_settings_from_env();
  if (!s)
    throw ArgumentError(fmt::format(
        "{} needs the fleet's cache: set KILN_REMOTE_CACHE=redis://[user:password@]host[:port][/db]"
        " (and KILN_REMOTE_CACHE_KEY where the fleet signs its entries)",
        command));
  return *s;
}

// The error of a command whose remote failed part way: what it did, and what to do.
CacheError remote_failed(const cache::RemoteCache& remote, const std::string& done) {
  return CacheError(
      fmt::format("the remote cache {} failed after {}; check the server (and "
                  "KILN_REMOTE_CACHE_TIMEOUT_MS) and run this again",
                  remote.describe(), done));
}

}  // namespace

int cache_push(const cache::DiskCache& c, const std::string& archs) {
  cache::RemoteCache remote(required_remote("kiln cache push"));
  const std::vector<std::string> wanted = split_list(archs);
  std::size_t pushed = 0, skipped = 0, bad = 0;
  for (const cache::EntryInfo& e : c.list()) {
    if (!e.kernel) {
      ++bad;  // never published: `kiln cache verify` removes it
      continue;
    }
    if (!wanted.empty() &&
        std::find(wanted.begin(), wanted.end(), e.kernel->arch) == wanted.end()) {
      ++skipped;
      continue;
    }
    if (!remote.put(*cache::CacheKey::parse(e.key), *e.kernel))
      throw remote_failed(remote, fmt::format("{} entries were pushed", pushed));
    ++pushed;
  }
  fmt::print("pushed {} entries from {} to {}{}{}\n", pushed, c.dir(), remote.describe(),
             skipped ? fmt::format(" ({} of other archs left)", skipped) : "",
             bad ? fmt::format(" ({} bad entries left: kiln cache verify)", bad) : "");
  return 0;
}

int cache_pull(const std::string& dir, const std::vector<std::string>& files,
               const std::string& archs) {
  required_remote("kiln cache pull");
  const std::vector<PrecompileWork> work = precompile_work_of(files, arch_list(archs));
  cache::KernelCache cache(cache::cache_options(dir, true, 0, {}));
  if (!cache.disk_writable())
    throw CacheError(fmt::format("kiln cache pull writes into the cache directory, but it is {}",
                                 cache.describe()));
  std::vector<cache::CacheKey> keys;
  for (const PrecompileWork& w : work)
    keys.push_back(compiler::key_of(w.spec, w.arch, compiler::SourceUnit(w.spec)));
  cache.prefetch(keys);  // one round trip for all those not on disk
  std::size_t pulled = 0, local = 0, missing = 0;
  for (const cache::CacheKey& k : keys) {
    const std::optional<cache::KernelCache::Result> r = cache.find(k);
    if (!r)
      ++missing;
    else
      ++(r->source == cache::KernelCache::Source::remote ? pulled : local);
  }
  const CacheCounters n = cache.counters();
  fmt::print(
      "pulled {} kernels into {}; {} were there already, {} are not in the remote{}\n", pulled,
      cache.describe(), local, missing,
      n.remote_refused ? fmt::format(" ({} refused: see the warnings)", n.remote_refused) : "");
  if (n.remote_errors) throw remote_failed(*cache.remote(), fmt::format("{} pulled", pulled));
  return 0;
}

void print_remote_stats(const std::string& dir) {
  const cache::DirStats s = cache::read_stats(dir);
  std::string server = "KILN_REMOTE_CACHE not set";
  if (const auto settings = cache::remote_settings_from_env()) server = settings->masked();
  fmt::print(
      "  remote ({}): {} hits, {} misses, {} waits on another machine's compile, {} refused, "
      "{} failed calls\n",
      server, s.remote_hits, s.remote_misses, s.remote_waits, s.remote_refused, s.remote_errors);
}

}  // namespace kiln::tools
