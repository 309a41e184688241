#include "cache/kernel_cache.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <kiln/error.hpp>
#include <unordered_set>
#include <utility>

#include "cache/key_lock.hpp"

namespace kiln::cache {

const char* to_string(KernelCache::Source s) {
  switch (s) {
    case KernelCache::Source::memory:
      return "memory";
    case KernelCache::Source::bundle:
      return "bundle";
    case KernelCache::Source::disk:
      return "disk";
    case KernelCache::Source::remote:
      return "remote";
    case KernelCache::Source::compiled:
      return "compiled";
  }
  return "?";
}

KernelCacheOptions cache_options(std::optional<std::string> dir, bool disk, std::uint64_t max_bytes,
                                 std::vector<std::string> bundles) {
  KernelCacheOptions co;
  const char* off = std::getenv("KILN_DISABLE_DISK_CACHE");
  if (disk && !(off && *off && std::strcmp(off, "0") != 0))
    co.dir = dir ? *dir : default_cache_dir();
  co.max_bytes = max_bytes ? max_bytes : default_max_bytes();
  co.bundles = std::move(bundles);
  for (std::string& b : bundles_from_env()) co.bundles.push_back(std::move(b));
  co.remote = remote_settings_from_env();
  return co;
}

KernelCache::KernelCache(std::optional<std::string> dir, DiskIo io)
    : KernelCache(KernelCacheOptions{std::move(dir),
                                     {},
                                     2ull << 30,
                                     std::chrono::milliseconds(30000),
                                     std::move(io),
                                     std::nullopt}) {}

KernelCache::KernelCache(KernelCacheOptions options) : options_(std::move(options)) {
  for (const std::string& path : options_.bundles) bundles_.push_back(Bundle::open(path));
  if (options_.remote) remote_ = std::make_unique<RemoteCache>(*options_.remote);
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

KernelCache::~KernelCache() { flush_stats(); }

void KernelCache::flush_stats() {
  DirStats delta;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (remote_) {  // the failed calls since the last flush
      const std::uint64_t errors = remote_->errors();
      unflushed_.remote_errors += errors - errors_flushed_;
      errors_flushed_ = errors;
    }
    if (!disk_ || !disk_writable_ || unflushed_.empty()) return;
    delta = unflushed_;
    unflushed_ = {};
  }
  if (!add_stats(disk_->dir(), delta))
    spdlog::debug("kiln: could not add to the cache statistics of {}", disk_->dir());
}

std::optional<KernelCache::Result> KernelCache::from_disk(const CacheKey& key) {
  DiskCache::Loaded loaded = disk_->load(key);
  std::lock_guard<std::mutex> lock(mutex_);
  switch (loaded.status) {
    case DiskCache::Status::hit: {
      ++counters_.disk_hits;
      ++unflushed_.disk_hits;
      auto k = std::make_shared<const CompiledKernel>(std::move(*loaded.kernel));
      const Result r{k, Source::disk, true};
      memory_.emplace(key, r);
      spdlog::debug("kiln: cache hit on disk for {} ({})", k->name, key.hex());
      return r;
    }
    case DiskCache::Status::bad:
      ++counters_.bad_entries;
      ++unflushed_.bad_entries;
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

std::optional<KernelCache::Result> KernelCache::from_remote(const CacheKey& key, bool last) {
  std::optional<RemoteCache::Fetched> f;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = prefetched_.find(key); it != prefetched_.end()) {
      // A miss stays for get()'s look after find()'s (the engine's, before older archs' keys).
      if (!last && it->second.status == RemoteCache::Status::miss) return std::nullopt;
      f = std::move(it->second);
      prefetched_.erase(it);
    }
  }
  if (!f) f = std::move(remote_->get({key}).front());
  return take_remote(key, std::move(*f));
}

std::optional<KernelCache::Result> KernelCache::take_remote(const CacheKey& key,
                                                            RemoteCache::Fetched f) {
  if (f.status == RemoteCache::Status::hit) {
    Result r{std::make_shared<const CompiledKernel>(std::move(*f.kernel)), Source::remote, false};
    r.saved = disk_writable() && publish(key, *r.kernel);  // written through
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.remote_hits, ++unflushed_.remote_hits;
    memory_.emplace(key, r);
    spdlog::debug("kiln: cache hit on the remote for {} ({})", r.kernel->name, key.hex());
    return r;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (f.status == RemoteCache::Status::miss) {
    ++counters_.remote_misses, ++unflushed_.remote_misses;
    spdlog::debug("kiln: remote cache miss for {}", key.hex());
  } else if (f.status == RemoteCache::Status::bad) {
    ++counters_.remote_refused, ++unflushed_.remote_refused;
    spdlog::warn("kiln: refused the entry of {} in the remote cache {}: {}; recompiling", key.hex(),
                 remote_->settings().masked(), f.problem);
  }
  return std::nullopt;
}

// A miss on every layer: where another machine is compiling `key` (it holds the fleet's lease),
// waits for its entry; else takes the lease (`leased`), released after the publish.
std::optional<KernelCache::Result> KernelCache::from_fleet(const CacheKey& key, bool* leased) {
  RemoteCache::Claim c = remote_->claim(key);
  *leased = c.leased;
  if (c.waited) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.remote_waits, ++unflushed_.remote_waits;
  }
  if (c.fetched) return take_remote(key, std::move(*c.fetched));
  return std::nullopt;
}

std::optional<KernelCache::Result> KernelCache::find(const CacheKey& key) {
  if (auto hit = from_memory(key)) return hit;
  if (disk_)
    if (auto hit = from_disk(key)) return hit;
  if (remote_) return from_remote(key, false);
  return std::nullopt;
}

void KernelCache::prefetch(const std::vector<CacheKey>& keys) {
  if (!remote_ || remote_->off()) return;
  std::vector<CacheKey> ask;
  std::unordered_set<CacheKey, CacheKeyHash> seen;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const CacheKey& k : keys)
      if (!memory_.count(k) && !prefetched_.count(k) && seen.insert(k).second) ask.push_back(k);
  }
  if (disk_) {  // an entry on disk is read from there (stat only here)
    std::vector<CacheKey> missing;
    for (const CacheKey& k : ask)
      if (::access(disk_->path_of(k).c_str(), F_OK) != 0) missing.push_back(k);
    ask.swap(missing);
  }
  spdlog::debug("kiln: asking the remote cache for {} of {} kernels at once", ask.size(),
                keys.size());
  std::vector<RemoteCache::Fetched> got = remote_->get(ask);
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::size_t i = 0; i < ask.size(); ++i)
    if (got[i].status != RemoteCache::Status::error && got[i].status != RemoteCache::Status::off)
      prefetched_.emplace(ask[i], std::move(got[i]));
}

std::optional<KernelCache::Result> KernelCache::from_memory(const CacheKey& key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      ++counters_.memory_hits;
      return Result{it->second.kernel, Source::memory, it->second.saved};
    }
    for (const Bundle& b : bundles_)
      if (auto k = b.find(key)) {
        ++counters_.bundle_hits;
        ++unflushed_.bundle_hits;
        prefetched_.erase(key);
        const Result r{std::make_shared<const CompiledKernel>(std::move(*k)), Source::bundle, true};
        memory_.emplace(key, r);
        return r;
      }
  }
  return std::nullopt;
}

KernelCache::Result KernelCache::get(const CacheKey& key,
                                     const std::function<CompiledKernel()>& compile) {
  if (auto hit = from_memory(key)) return *hit;
  std::optional<KeyLock> key_lock;
  if (disk_) {
    if (auto hit = from_disk(key)) return *hit;
    if (disk_writable()) {
      // Another process may be compiling this key: wait for it, then look again.
      key_lock = KeyLock::acquire(disk_->dir(), key.hex(), options_.lock_timeout);
      if (auto hit = from_disk(key)) return *hit;
    }
  }
  // Declared before the compile so that a compile that throws releases it too.
  struct Lease {
    RemoteCache* remote = nullptr;
    CacheKey key;
    ~Lease() {
      if (remote) remote->release(key);
    }
  } lease;
  if (remote_) {
    if (auto hit = from_remote(key, true)) return *hit;
    bool leased = false;
    if (auto hit = from_fleet(key, &leased)) return *hit;
    if (leased) lease.remote = remote_.get(), lease.key = key;  // (a temporary would release)
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++unflushed_.misses;
  }
  Result r{std::make_shared<const CompiledKernel>(compile()), Source::compiled, false};
  r.saved = disk_writable() && publish(key, *r.kernel);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.compiles;
    ++unflushed_.compiles;
    counters_.compile_ms += r.kernel->compile_ms;
    memory_.emplace(key, r);
  }
  if (remote_) remote_->put(key, *r.kernel);  // after the local publish, before the release
  flush_stats();  // a compile costs tens of milliseconds; a count kept now costs ~0.1
  return r;
}

bool KernelCache::publish(const CacheKey& key, const CompiledKernel& k) {
  {
    // Before the store: a cap applied by another thread's publish meanwhile keeps this entry,
    // which reaches memory_ only after its own publish returns.
    std::lock_guard<std::mutex> lock(mutex_);
    published_.insert(key.hex());
  }
  bool unusable = false;
  if (std::string why = disk_->store(key, k, &unusable); !why.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (unusable) {
      disk_writable_ = false;
      disk_problem_ = why;
      spdlog::warn(
          "kiln: the cache directory {} cannot take new entries ({}); new kernels stay in memory "
          "for this "
          "process",
          disk_->dir(), why);
    } else {
      spdlog::warn("kiln: could not publish {} to the disk cache: {}", k.name, why);
    }
    return false;
  }
  apply_cap(key);
  return true;
}

// Evicts least recently used entries down to the cap, but never one this process uses (it
// would only compile it again, here or in the next run): a cap smaller than those entries is
// exceeded, with one warning.
void KernelCache::apply_cap(const CacheKey& published) {
  std::unordered_set<std::string> keep{published.hex()};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& entry : memory_) keep.insert(entry.first.hex());
    keep.insert(published_.begin(), published_.end());
  }
  const GcResult gc = disk_->gc(options_.max_bytes, keep);
  if (gc.removed)
    spdlog::info("kiln: evicted {} cache entries ({}) to stay under {}", gc.removed,
                 human_bytes(gc.removed_bytes), describe_cap(options_.max_bytes));
  if (gc.kept_bytes <= options_.max_bytes) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::exchange(cap_warned_, true)) return;
  }
  if (gc.failed)
    spdlog::warn("kiln: could not evict {} entries of {} ({}); it stays over its size cap of {}",
                 gc.failed, disk_->dir(), gc.failure, describe_cap(options_.max_bytes));
  else
    spdlog::warn(
        "kiln: the cache size cap ({}) is smaller than the entries this process uses ({} in {}); "
        "they stay, over the cap, and the others were evicted; raise KILN_CACHE_MAX_BYTES",
        describe_cap(options_.max_bytes), human_bytes(gc.needed_bytes), disk_->dir());
}

bool KernelCache::disk_writable() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return disk_ && disk_writable_;
}

void KernelCache::count_memory_hit(std::uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.memory_hits += n;
}

void KernelCache::count_remote_refused(std::uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  counters_.remote_refused += n;
  unflushed_.remote_refused += n;
}

CacheCounters KernelCache::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CacheCounters c = counters_;
  if (remote_) c.remote_errors = remote_->errors();
  return c;
}

std::string KernelCache::describe() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!disk_) return "memory only (" + disk_problem_ + ")";
  if (!disk_writable_) return disk_->dir() + " (read-only: " + disk_problem_ + ")";
  return disk_->dir();
}

}  // namespace kiln::cache
