// The remote layer of a kiln built without hiredis (KILN_REDIS=OFF, or AUTO where it was not
// found): asking for one is a CacheError that says how to get it. cache/remote.cpp is the client.

#include <kiln/error.hpp>
#include <utility>

#include "cache/remote.hpp"

namespace kiln::cache {

bool remote_cache_built() { return false; }

RemoteCache::RemoteCache(RemoteSettings settings) : settings_(std::move(settings)) {
  throw CacheError(
      "a remote cache was asked for (KILN_REMOTE_CACHE=" + settings_.masked() +
      "), but this kiln was built without Redis support (hiredis was not found at build time, "
      "or it was configured with -DKILN_REDIS=OFF): install libhiredis-dev (scripts/setup.sh "
      "does) and rebuild kiln, or unset KILN_REMOTE_CACHE");
}

RemoteCache::~RemoteCache() = default;

std::vector<RemoteCache::Fetched> RemoteCache::get(const std::vector<CacheKey>& keys) {
  return std::vector<Fetched>(keys.size());  // never reached: no RemoteCache is ever made
}

bool RemoteCache::put(const CacheKey&, const CompiledKernel&) { return false; }

std::optional<RemoteCache::Answer> RemoteCache::call(const std::vector<std::string>&,
                                                     const std::string&) {
  return std::nullopt;
}

RemoteCache::Claim RemoteCache::claim(const CacheKey&) { return {}; }

void RemoteCache::release(const CacheKey&) {}

std::uint64_t RemoteCache::errors() const { return 0; }

bool RemoteCache::off() const { return true; }

std::string RemoteCache::describe() const { return settings_.masked() + " (not built)"; }

}  // namespace kiln::cache
