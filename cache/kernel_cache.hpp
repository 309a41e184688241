#pragma once
// The layered kernel cache: memory -> bundles -> disk -> remote -> compile. Counts what it
// does. A disk layer that cannot be used (refused, read-only, full) degrades to memory with one
// warning; a remote one that fails is off for a while (cache/remote.hpp).

#include <chrono>
#include <cstdint>
#include <functional>
#include <kiln/cache_counters.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cache/bundle.hpp"
#include "cache/disk_cache.hpp"
#include "cache/redis_url.hpp"
#include "cache/remote.hpp"
#include "cache/stats.hpp"

namespace kiln::cache {

struct KernelCacheOptions {
  std::optional<std::string> dir;    ///< unset: no disk layer
  std::vector<std::string> bundles;  ///< opened and verified up front
  std::uint64_t max_bytes = 2ull << 30;
  std::chrono::milliseconds lock_timeout{30000};
  DiskIo io = DiskIo::posix();
  std::optional<RemoteSettings> remote;  ///< unset: no remote layer
};

/// The layers every user of the cache (an engine, `kiln precompile`) looks up, from the
/// environment: `dir` (unset: default_cache_dir(); none with KILN_DISABLE_DISK_CACHE=1), the
/// cap (0: default_max_bytes()), `bundles` then those of $KILN_BUNDLE, the remote layer of
/// $KILN_REMOTE_CACHE (remote_settings_from_env: throws CacheError for a bad value).
KernelCacheOptions cache_options(std::optional<std::string> dir, bool disk, std::uint64_t max_bytes,
                                 std::vector<std::string> bundles);

class KernelCache {
 public:
  /// Throws CacheError for a bundle that does not verify.
  explicit KernelCache(KernelCacheOptions options);
  /// Memory and disk only (tests).
  explicit KernelCache(std::optional<std::string> dir, DiskIo io = DiskIo::posix());
  /// Adds what it did to the directory's counts (cache/stats.hpp).
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  enum class Source { memory, bundle, disk, remote, compiled };
  struct Result {
    std::shared_ptr<const CompiledKernel> kernel;
    Source source = Source::compiled;
    bool saved =
        false;  ///< the kernel is in a bundle or on disk (not in this process's memory only)
  };
  /// The kernel of `key`: from memory, a bundle, the disk (verified), the remote (verified,
  /// then written to disk), else `compile()`'s, which is then published to disk (under a
  /// per-key lock, then the size cap is applied) and then to the remote. With a remote, a miss
  /// first claims the fleet's lease on the key (RemoteCache::claim): where another machine
  /// holds it, the kernel is that machine's entry once published (bounded wait).
  /// Exceptions of `compile` pass through; nothing is stored then. Thread-safe.
  Result get(const CacheKey& key, const std::function<CompiledKernel()>& compile);
  /// The kernel of `key` from memory, a bundle, the disk or the remote, as get() finds it;
  /// none, and nothing compiled, where no layer holds it. Thread-safe.
  std::optional<Result> find(const CacheKey& key);
  /// Asks the remote, in one round trip, for those of `keys` that no local layer holds; the
  /// answers wait for get() and find() (which count them). Nothing without a remote layer.
  void prefetch(const std::vector<CacheKey>& keys);
  bool has_remote() const { return remote_ != nullptr; }
  /// The remote layer (tuning records, the CLI), or none.
  RemoteCache* remote() const { return remote_.get(); }
  /// Counts `n` remote records refused by a user of remote() (tuning records).
  void count_remote_refused(std::uint64_t n);

  /// Counts `n` hits served by a layer in front of this cache (the engine's loaded kernels).
  void count_memory_hit(std::uint64_t n = 1);
  CacheCounters counters() const;
  bool disk_enabled() const { return disk_.has_value(); }
  /// Whether it was given a directory (usable or not).
  bool wants_disk() const { return options_.dir.has_value(); }
  bool disk_writable() const;
  const std::vector<Bundle>& bundles() const { return bundles_; }
  /// The directory, or a note of why there is none.
  std::string describe() const;

 private:
  std::optional<Result> from_memory(const CacheKey& key);  ///< memory, then the bundles
  std::optional<Result> from_disk(const CacheKey& key);
  /// `last`: get()'s look, which takes a prefetched miss (find() leaves it for get()).
  std::optional<Result> from_remote(const CacheKey& key, bool last);
  std::optional<Result> take_remote(const CacheKey& key, RemoteCache::Fetched f);
  std::optional<Result> from_fleet(const CacheKey& key, bool* leased);
  void flush_stats();
  bool publish(const CacheKey& key, const CompiledKernel& k);
  void apply_cap(const CacheKey& published);

  mutable std::mutex mutex_;
  KernelCacheOptions options_;
  std::vector<Bundle> bundles_;
  std::optional<DiskCache> disk_;
  bool disk_writable_ = true;
  bool cap_warned_ = false;                    ///< the cap could not be kept; said once
  std::unordered_set<std::string> published_;  ///< keys this process stored (hex), kept by the cap
  std::string disk_problem_;
  std::unordered_map<CacheKey, Result, CacheKeyHash>
      memory_;  ///< as first served; source, saved kept
  std::unique_ptr<RemoteCache> remote_;
  std::unordered_map<CacheKey, RemoteCache::Fetched, CacheKeyHash> prefetched_;  ///< not yet used
  CacheCounters counters_;
  DirStats unflushed_;                ///< this process's counts not yet added to the directory's
  std::uint64_t errors_flushed_ = 0;  ///< the remote's failed calls already in unflushed_
};

const char* to_string(KernelCache::Source s);

}  // namespace kiln::cache
