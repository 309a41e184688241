#pragma once
// Where the remote cache layer lives: KILN_REMOTE_CACHE=redis://[user:password@]host[:port][/db],
// parsed strictly. The password never reaches a message: masked() prints it as "***".

#include <chrono>
#include <optional>
#include <string>

namespace kiln::cache {

/// The longest entry lifetime taken: ten years.
inline constexpr long kMaxTtlSeconds = 10L * 365 * 24 * 3600;

struct RemoteSettings {
  std::string host;
  int port = 6379;
  std::string user;      ///< ACL user; empty: AUTH with the password alone (requirepass)
  std::string password;  ///< empty: no AUTH
  int db = 0;            ///< SELECTed when not 0
  std::chrono::milliseconds timeout{100};    ///< of every connect and every call
  std::chrono::seconds ttl{30 * 24 * 3600};  ///< of every entry, refreshed on a hit
  std::chrono::seconds backoff{30};          ///< how long the layer stays off after a failure
  /// How long a machine that compiles a kernel keeps the fleet's lease on it (the others wait
  /// for its entry meanwhile); 0: no leases (every machine compiles what it misses).
  std::chrono::milliseconds lease{20000};
  /// KILN_REMOTE_CACHE_KEY: entries are signed with it, and only entries signed with it are
  /// loaded (cache/sign.hpp). Empty: unsigned. Never logged.
  std::string sign_key;
  /// The URL as messages print it: redis://user:***@host:port/db.
  std::string masked() const;
};

/// Parses a redis:// URL; throws CacheError naming `what` (the variable it came from) and what
/// to fix, with the password masked. Percent escapes (%40) are decoded in the user and password.
RemoteSettings parse_redis_url(const std::string& url, const std::string& what);

/// The remote layer the environment asks for: none without $KILN_REMOTE_CACHE; else its URL,
/// the password of $KILN_REMOTE_CACHE_PASSWORD where the URL has none, the timeout of
/// $KILN_REMOTE_CACHE_TIMEOUT_MS (1 to 60000), the entries' lifetime of $KILN_REMOTE_CACHE_TTL_S
/// (60 s to ten years), the back-off of $KILN_REMOTE_CACHE_BACKOFF_S (0 to 86400 s), the lease of
/// $KILN_REMOTE_CACHE_LEASE_MS (0, or 100 to 600000), the signing
/// key of $KILN_REMOTE_CACHE_KEY (at least 16 bytes; a kiln without OpenSSL refuses one).
/// Throws CacheError for a bad value.
std::optional<RemoteSettings> remote_settings_from_env();

}  // namespace kiln::cache
