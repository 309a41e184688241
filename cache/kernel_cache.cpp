#include "cache/kernel_cache.hpp"

#include <spdlog/spdlog.h>

#include <kiln/error.hpp>

#include "cache/key_lock.hpp"

namespace kiln::cache {

const char* to_string(KernelCache::Source s) {
  switch (s) {
    case KernelCache::Source::memory: return "memory";
    case KernelCache::Source::bundle: return "bundle";
    case KernelCache::Source::disk: return "disk";
    case KernelCache::Source::compiled: return "compiled";
  }
  return "?";
}

KernelCache::KernelCache(std::optional<std::string> dir, DiskIo io)
    : KernelCache(KernelCacheOptions{std::move(dir), {}, 2ull << 30, std::chrono::milliseconds(30000), std::move(io)}) {}

KernelCache::KernelCache(KernelCacheOptions options) : options_(std::move(options)) {
  for (const std::string& path : options_.bundles) bundles_.push_back(Bundle::open(path));
  if (!options_.dir) {
    disk_problem_ = "disk cache disabled";
    return;
  }
  try {
    disk_.emplace(*options_.dir, options_.io);
  } catch (const CacheError& e) {
    disk_problem_ = e.what();
    spdlog::warn("kiln: {}; compiled kernels stay in memory for this process", e.what());
  }
}

std::optional<KernelCache::Result> KernelCache::from_disk(const CacheKey& key) {
  DiskCache::Loaded loaded = disk_->load(key);
  std::lock_guard<std::mutex> lock(mutex_);
  switch (loaded.status) {
    case DiskCache::Status::hit: {
      ++counters_.disk_hits;
      auto k = std::make_shared<const CompiledKernel>(std::move(*loaded.kernel));
      memory_.emplace(key, k);
      spdlog::debug("kiln: cache hit on disk for {} ({})", k->name, key.hex());
      return Result{k, Source::disk};
    }
    case DiskCache::Status::bad:
      ++counters_.bad_entries;
      spdlog::warn("kiln: {}; recompiling", loaded.problem);
      break;
    case DiskCache::Status::refused:
      spdlog::warn("kiln: {}; recompiling", loaded.problem);
      break;
    case DiskCache::Status::miss:
      spdlog::debug("kiln: cache miss for {}: no entry", key.hex());
      break;
  }
  return std::nullopt;
}

KernelCache::Result KernelCache::get(const CacheKey& key, const std::function<CompiledKernel()>& compile) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      ++counters_.memory_hits;
      return {it->second, Source::memory};
    }
    for (const Bundle& b : bundles_)
      if (auto k = b.find(key)) {
        ++counters_.bundle_hits;
        auto shared = std::make_shared<const CompiledKernel>(std::move(*k));
        memory_.emplace(key, shared);
        return {shared, Source::bundle};
      }
  }
  std::optional<KeyLock> key_lock;
  if (disk_) {
    if (auto hit = from_disk(key)) return *hit;
    if (disk_writable()) {
      // Another process may be compiling this key: wait for it, then look again.
      key_lock = KeyLock::acquire(disk_->dir(), key.hex(), options_.lock_timeout);
      if (auto hit = from_disk(key)) return *hit;
    }
  }
  auto k = std::make_shared<const CompiledKernel>(compile());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.compiles;
    counters_.compile_ms += k->compile_ms;
    memory_.emplace(key, k);
  }
  if (disk_writable()) publish(key, *k);
  return {k, Source::compiled};
}

void KernelCache::publish(const CacheKey& key, const CompiledKernel& k) {
  bool unusable = false;
  if (std::string why = disk_->store(key, k, &unusable); !why.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (unusable) {
      disk_writable_ = false;
      disk_problem_ = why;
      spdlog::warn("kiln: the cache directory {} cannot take new entries ({}); new kernels stay in memory for this "
                   "process",
                   disk_->dir(), why);
    } else {
      spdlog::warn("kiln: could not publish {} to the disk cache: {}", k.name, why);
    }
    return;
  }
  const GcResult gc = disk_->gc(options_.max_bytes);
  if (gc.removed) spdlog::info("kiln: evicted {} cache entries ({} bytes) to stay under {} bytes", gc.removed,
                               gc.removed_bytes, options_.max_bytes);
}

bool KernelCache::disk_writable() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return disk_ && disk_writable_;
}

void KernelCache::count_memory_hit() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counters_.memory_hits;
}

CacheCounters KernelCache::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

std::string KernelCache::describe() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!disk_) return "memory only (" + disk_problem_ + ")";
  if (!disk_writable_) return disk_->dir() + " (read-only: " + disk_problem_ + ")";
  return disk_->dir();
}

}  // namespace kiln::cache
