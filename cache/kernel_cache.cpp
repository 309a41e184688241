#include "cache/kernel_cache.hpp"

#include <spdlog/spdlog.h>

#include <kiln/error.hpp>

namespace kiln::cache {

const char* to_string(KernelCache::Source s) {
  switch (s) {
    case KernelCache::Source::memory: return "memory";
    case KernelCache::Source::disk: return "disk";
    case KernelCache::Source::compiled: return "compiled";
  }
  return "?";
}

KernelCache::KernelCache(std::optional<std::string> dir, DiskIo io) {
  if (!dir) {
    disk_problem_ = "disk cache disabled";
    return;
  }
  try {
    disk_.emplace(*dir, std::move(io));
  } catch (const CacheError& e) {
    disk_problem_ = e.what();
    spdlog::warn("kiln: {}; compiled kernels stay in memory for this process", e.what());
  }
}

KernelCache::Result KernelCache::get(const CacheKey& key, const std::function<CompiledKernel()>& compile) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      ++counters_.memory_hits;
      return {it->second, Source::memory};
    }
  }
  if (disk_) {
    DiskCache::Loaded loaded = disk_->load(key);
    std::lock_guard<std::mutex> lock(mutex_);
    switch (loaded.status) {
      case DiskCache::Status::hit: {
        ++counters_.disk_hits;
        auto k = std::make_shared<const CompiledKernel>(std::move(*loaded.kernel));
        memory_.emplace(key, k);
        spdlog::debug("kiln: cache hit on disk for {} ({})", k->name, key.hex());
        return {k, Source::disk};
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
  }
  auto k = std::make_shared<const CompiledKernel>(compile());
  std::lock_guard<std::mutex> lock(mutex_);
  ++counters_.compiles;
  counters_.compile_ms += k->compile_ms;
  memory_.emplace(key, k);
  if (disk_ && disk_writable_) {
    bool unusable = false;
    if (std::string why = disk_->store(key, *k, &unusable); !why.empty()) {
      if (unusable) {
        disk_writable_ = false;
        disk_problem_ = why;
        spdlog::warn("kiln: the cache directory {} cannot take new entries ({}); new kernels stay in "
                     "memory for this process",
                     disk_->dir(), why);
      } else {
        spdlog::warn("kiln: could not publish {} to the disk cache: {}", k->name, why);
      }
    }
  }
  return {k, Source::compiled};
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
  if (!disk_) return "memory only (" + disk_problem_ + ")";
  if (!disk_writable_) return disk_->dir() + " (read-only: " + disk_problem_ + ")";
  return disk_->dir();
}

}  // namespace kiln::cache
