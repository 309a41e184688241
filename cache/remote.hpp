#pragma once
// The remote layer: entries in Redis (hiredis), shared by a fleet, after the disk cache. The
// same verified entry format as on disk, under kiln:v<format>:<key hex>, with a TTL refreshed
// on every hit. Never slower than no remote: every call is bounded by the timeout, and a
// remote that fails (down, slow, refusing) is one warning and off for the back-off interval.
// The client is cache/remote.cpp; a kiln built without hiredis has cache/remote_off.cpp instead.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/key.hpp"
#include "cache/redis_url.hpp"
#include "stages/kernel.hpp"

struct redisContext;

namespace kiln::cache {

class RemoteCache {
 public:
  explicit RemoteCache(RemoteSettings settings);
  ~RemoteCache();
  RemoteCache(const RemoteCache&) = delete;
  RemoteCache& operator=(const RemoteCache&) = delete;

  enum class Status {
    hit,
    miss,
    bad,    ///< an entry that does not verify (corrupt, truncated, another key's): never loaded
    error,  ///< the call failed: the layer is off for the back-off interval
    off,    ///< the layer is off: nothing asked
  };
  struct Fetched {
    Status status = Status::off;
    std::optional<CompiledKernel> kernel;
    std::string problem;  ///< for bad
  };
  /// The entries of `keys`, in order, in one round trip (MGET), verified; hits' TTLs are
  /// refreshed (one more round trip, pipelined). Thread-safe.
  std::vector<Fetched> get(const std::vector<CacheKey>& keys);
  /// Publishes an entry with the TTL (SET EX). False where it could not. Thread-safe.
  bool put(const CacheKey& key, const CompiledKernel& kernel);

  /// What claim() found: compile under the fleet's lease, compile without one, or an entry.
  struct Claim {
    bool leased = false;             ///< this process holds the lease: compile, put(), release()
    bool waited = false;             ///< another machine held it, and this one waited
    std::optional<Fetched> fetched;  ///< a good entry that came meanwhile (a bad one is none)
  };
  /// Before compiling `key`, so that a fleet compiles it once: takes the lease on it
  /// (SET kiln:v<format>:lease:<key> <id> NX PX <lease>), or, where another machine holds it,
  /// polls for its entry; takes the lease over where the holder's is gone without an entry (it
  /// died, or its compile failed), and gives up waiting after twice the lease time. Nothing
  /// (compile, no lease) where the layer is off or fails, or settings().lease is 0. Thread-safe.
  Claim claim(const CacheKey& key);
  /// Drops this process's lease on `key` (only where it is still its own). Thread-safe.
  void release(const CacheKey& key);

  /// A reply as values: a string or a status in `text`, an integer in `number`, an array's
  /// strings in `items` (a nil element as ""); `nil` for none.
  struct Answer {
    bool nil = false;
    std::string text;
    long long number = 0;
    std::vector<std::string> items;
  };
  /// One command (tuning records, the CLI), bounded by the timeout; none where the layer is off
  /// or the call failed (an error reply too: `what` then names it in the warning, and the layer
  /// backs off). Thread-safe.
  std::optional<Answer> call(const std::vector<std::string>& args, const std::string& what);

  /// Calls that failed (each one turned the layer off).
  std::uint64_t errors() const;
  /// Whether the layer is in its back-off interval now.
  bool off() const;
  /// The URL (password masked), and why the layer is off, if it is.
  std::string describe() const;
  const RemoteSettings& settings() const { return settings_; }

 private:
  bool usable_locked();                        ///< connected, or connects; false when off
  void failed_locked(const std::string& why);  ///< drops the connection; off for the back-off
  /// The entry in a value read: its signature (with a key), then the entry itself, checked.
  Fetched verified(const CacheKey& key, const char* bytes, std::size_t n) const;
  /// One round trip of claim(): the lease taken, or the entry; none where the call failed.
  std::optional<Claim> try_claim(const CacheKey& key);

  RemoteSettings settings_;
  mutable std::mutex mutex_;
  redisContext* context_ = nullptr;
  std::chrono::steady_clock::time_point off_until_{};
  std::string problem_;  ///< why it is off (last failure)
  bool warned_ = false;  ///< the current outage was warned of
  std::uint64_t errors_ = 0;
  std::string lease_id_;  ///< this process's leases' value: host, pid, a random number
};

/// The Redis key of an entry: kiln:v<format>:<32 hex digits>.
inline std::string remote_key(const CacheKey& key) {
  return "kiln:v" + std::to_string(kFormatVersion) + ":" + key.hex();
}

/// The Redis key of the lease on compiling an entry: kiln:v<format>:lease:<32 hex digits>.
inline std::string lease_key(const CacheKey& key) {
  return "kiln:v" + std::to_string(kFormatVersion) + ":lease:" + key.hex();
}

/// Whether this kiln was built with the remote layer's client (hiredis; CMake's KILN_REDIS).
/// Without it (cache/remote_off.cpp), RemoteCache's constructor throws CacheError.
bool remote_cache_built();

}  // namespace kiln::cache
