#pragma once
// The layered kernel cache: memory -> bundles -> disk -> compile. Counts what it does. A disk
// layer that cannot be used (refused, read-only, full) degrades to memory with one warning.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <kiln/engine.hpp>

#include "cache/bundle.hpp"
#include "cache/disk_cache.hpp"

namespace kiln::cache {

struct KernelCacheOptions {
  std::optional<std::string> dir;      ///< unset: no disk layer
  std::vector<std::string> bundles;    ///< opened and verified up front
  std::uint64_t max_bytes = 2ull << 30;
  std::chrono::milliseconds lock_timeout{30000};
  DiskIo io = DiskIo::posix();
};

class KernelCache {
 public:
  /// Throws CacheError for a bundle that does not verify.
  explicit KernelCache(KernelCacheOptions options);
  /// Memory and disk only (tests).
  explicit KernelCache(std::optional<std::string> dir, DiskIo io = DiskIo::posix());

  enum class Source { memory, bundle, disk, compiled };
  struct Result {
    std::shared_ptr<const CompiledKernel> kernel;
    Source source = Source::compiled;
  };
  /// The kernel of `key`: from memory, a bundle, the disk (verified), else `compile()`'s,
  /// which is then published to disk (under a per-key lock, then the size cap is applied).
  /// Exceptions of `compile` pass through; nothing is stored then. Thread-safe.
  Result get(const CacheKey& key, const std::function<CompiledKernel()>& compile);

  /// Counts a hit served by a layer in front of this cache (the engine's loaded kernels).
  void count_memory_hit();
  CacheCounters counters() const;
  bool disk_enabled() const { return disk_.has_value(); }
  bool disk_writable() const;
  const std::vector<Bundle>& bundles() const { return bundles_; }
  /// The directory, or a note of why there is none.
  std::string describe() const;

 private:
  std::optional<Result> from_disk(const CacheKey& key);
  void publish(const CacheKey& key, const CompiledKernel& k);

  mutable std::mutex mutex_;
  KernelCacheOptions options_;
  std::vector<Bundle> bundles_;
  std::optional<DiskCache> disk_;
  bool disk_writable_ = true;
  std::string disk_problem_;
  std::unordered_map<CacheKey, std::shared_ptr<const CompiledKernel>, CacheKeyHash> memory_;
  CacheCounters counters_;
};

const char* to_string(KernelCache::Source s);

}  // namespace kiln::cache
