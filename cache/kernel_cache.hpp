#pragma once
// The layered kernel cache: memory -> disk -> compile. Counts what it does. A disk layer that
// cannot be used (refused, read-only, full) degrades to memory with one warning.

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <kiln/engine.hpp>

#include "cache/disk_cache.hpp"

namespace kiln::cache {

class KernelCache {
 public:
  /// `dir` unset: memory only.
  explicit KernelCache(std::optional<std::string> dir, DiskIo io = DiskIo::posix());

  enum class Source { memory, disk, compiled };
  struct Result {
    std::shared_ptr<const CompiledKernel> kernel;
    Source source = Source::compiled;
  };
  /// The kernel of `key`: from memory, else from disk (verified), else `compile()`'s, which
  /// is then published to disk. Exceptions of `compile` pass through; nothing is stored then.
  Result get(const CacheKey& key, const std::function<CompiledKernel()>& compile);

  /// Counts a hit served by a layer in front of this cache (the engine's loaded kernels).
  void count_memory_hit();
  CacheCounters counters() const;
  bool disk_enabled() const { return disk_.has_value(); }
  bool disk_writable() const { return disk_ && disk_writable_; }
  /// The directory, or a note of why there is none.
  std::string describe() const;

 private:
  mutable std::mutex mutex_;
  std::optional<DiskCache> disk_;
  bool disk_writable_ = true;
  std::string disk_problem_;
  std::unordered_map<CacheKey, std::shared_ptr<const CompiledKernel>, CacheKeyHash> memory_;
  CacheCounters counters_;
};

const char* to_string(KernelCache::Source s);

}  // namespace kiln::cache
