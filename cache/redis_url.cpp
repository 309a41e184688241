#include "cache/redis_url.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <kiln/error.hpp>
#include <string_view>

#include "cache/sign.hpp"

namespace kiln::cache {

namespace {

constexpr std::string_view kScheme = "redis://";

// A decimal number of at most 9 digits in [lo, hi]; none for anything else.
std::optional<long> number_in(std::string_view s, long lo, long hi) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  long n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  if (n < lo || n > hi) return std::nullopt;
  return n;
}

std::optional<std::string> percent_decoded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    int v = 0;
    for (char c : s.substr(i + 1, 2)) {
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + d;
    }
    out += char(v);
    i += 2;
  }
  return out;
}

bool host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

}  // namespace

std::string RemoteSettings::masked() const {
  std::string auth;
  if (!user.empty() || !password.empty()) auth = user + (password.empty() ? "" : ":***") + "@";
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("redis://{}{}{}{}:{}/{}", auth, v6 ? "[" : "", host, v6 ? "]" : "", port, db);
}

RemoteSettings parse_redis_url(const std::string& url, const std::string& what) {
  // Until the password is found, messages show nothing of the URL after the scheme's "//".
  const auto fail = [&](const std::string& shown, const std::string& why) {
    return CacheError(fmt::format(
        "{}={} is not a remote cache URL: {}; write redis://[user:password@]host[:port][/db]", what,
        shown, why));
  };
  std::string_view rest(url);
  if (rest.substr(0, 9) == "rediss://")
    throw fail("rediss://...",
               "TLS is not supported by the Redis client kiln uses (hiredis 0.14); reach the "
               "server through a local TLS tunnel (stunnel, ssh -L) and use redis://");
  if (rest.substr(0, kScheme.size()) != kScheme)
    throw fail(printable_name(url.substr(0, url.find('@'))), "it must start with redis://");
  rest.remove_prefix(kScheme.size());
  RemoteSettings s;
  std::string shown = "redis://";
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view info = rest.substr(0, at);
    const std::size_t colon = info.find(':');
    auto user = percent_decoded(info.substr(0, colon));
    auto pass = colon == std::string_view::npos ? std::optional<std::string>("")
                                                : percent_decoded(info.substr(colon + 1));
    shown +=
        std::string(info.substr(0, colon)) + (colon == std::string_view::npos ? "" : ":***") + "@";
    rest.remove_prefix(at + 1);
    if (!user || !pass) throw fail(shown + "...", "a bad %-escape in the user or password");
    s.user = *user;
    s.password = *pass;
    if (s.user.empty() && s.password.empty())
      throw fail(shown + "...", "an empty user and password");
  }
  shown += printable_name(rest);
  if (rest.find_first_of("?#") != std::string_view::npos)
    throw fail(shown, "it has a query or fragment (kiln takes none)");
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) {
      const auto n = number_in(db, 0, 1 << 20);
      if (!n) throw fail(shown, "the database after '/' must be a number (0, 1, ...)");
      s.db = int(*n);
    }
  }
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {  // [::1]:6379
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) throw fail(shown, "an IPv6 host without its ']'");
    s.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
    if (!authority.empty() && authority.front() != ':')
      throw fail(shown, "something other than :port after the IPv6 host");
    port = authority.empty() ? "" : authority.substr(1);
    if (authority == ":") throw fail(shown, "an empty port after ':'");
  } else {
    const std::size_t colon = authority.find(':');
    s.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) throw fail(shown, "an empty port after ':'");
    }
    for (char c : s.host)
      if (!host_char(c)) throw fail(shown, "the host may hold letters, digits, '.', '-' and '_'");
  }
  if (s.host.empty()) throw fail(shown, "no host");
  if (!port.empty()) {
    const auto n = number_in(port, 1, 65535);
    if (!n) throw fail(shown, "the port must be a number from 1 to 65535");
    s.port = int(*n);
  }
  return s;
}

namespace {

// $name as a whole number in [lo, hi]; `fallback` where it is unset or empty. Throws CacheError
// naming the variable, what it holds (`what`) and the range for anything else.
long env_number(const char* name, long lo, long hi, long fallback, const char* what) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  const auto n = number_in(v, lo, hi);
  if (!n)
    throw CacheError(fmt::format("{}={} is not {}: write a whole number from {} to {} (default {})",
                                 name, printable_name(v), what, lo, hi, fallback));
  return *n;
}

}  // namespace

std::optional<RemoteSettings> remote_settings_from_env() {
  const char* url = std::getenv("KILN_REMOTE_CACHE");
  if (!url || !*url) return std::nullopt;
  RemoteSettings s = parse_redis_url(url, "KILN_REMOTE_CACHE");
  if (const char* p = std::getenv("KILN_REMOTE_CACHE_PASSWORD"); p && *p && s.password.empty())
    s.password = p;
  s.timeout = std::chrono::milliseconds(env_number("KILN_REMOTE_CACHE_TIMEOUT_MS", 1, 60000,
                                                   s.timeout.count(), "a timeout in milliseconds"));
  s.ttl = std::chrono::seconds(env_number("KILN_REMOTE_CACHE_TTL_S", 60, kMaxTtlSeconds,
                                          s.ttl.count(), "an entry lifetime in seconds"));
  s.backoff = std::chrono::seconds(env_number("KILN_REMOTE_CACHE_BACKOFF_S", 0, 86400,
                                              s.backoff.count(), "a back-off in seconds"));
  s.lease = std::chrono::milliseconds(env_number("KILN_REMOTE_CACHE_LEASE_MS", 0, 600000,
                                                 s.lease.count(), "a lease in milliseconds"));
  if (s.lease.count() > 0 && s.lease.count() < 100)
    throw CacheError(fmt::format(
        "KILN_REMOTE_CACHE_LEASE_MS={} is shorter than a compile: write 0 (no leases) or a "
        "whole number of milliseconds from 100 to 600000 (default 20000)",
        s.lease.count()));
  if (const char* k = std::getenv("KILN_REMOTE_CACHE_KEY"); k && *k) {
    s.sign_key = k;
    if (s.sign_key.size() < kMinSigningKeyBytes)
      throw CacheError(fmt::format(
          "KILN_REMOTE_CACHE_KEY is {} bytes long: a signing key needs at least {} (make one with "
          "`openssl rand -hex 32` and give the same one to every machine of the fleet)",
          s.sign_key.size(), kMinSigningKeyBytes));
    if (!signing_built()) hmac_sha256(s.sign_key, "");  // the CacheError that says why
  }
  return s;
}

}  // namespace kiln::cache
