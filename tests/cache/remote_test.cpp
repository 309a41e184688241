// The remote cache layer (cache/remote.hpp) against a real redis-server started by the tests.

#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <kiln/error.hpp>

#include "cache/kernel_cache.hpp"
#include "tests/cache/fixtures.hpp"
#include "tests/cache/redis_server.hpp"
#include "tests/cache/remote_fixtures.hpp"
#include "tests/support.hpp"

using namespace kiln::cache;
using kiln::test::Counting;
using kiln::test::kernel_of;
using kiln::test::key_of;
using kiln::test::machine;
using kiln::test::redis;
using kiln::test::RedisServer;
using kiln::test::skip_without_client;
using kiln::test::TempDir;
using kiln::test::Warnings;

namespace {

std::string parse_error(const std::string& url) {
  try {
    parse_redis_url(url, "KILN_REMOTE_CACHE");
  } catch (const kiln::CacheError& e) {
    return e.what();
  }
  return "";
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

TEST_CASE("remote cache: URLs are parsed strictly, and no message shows the password") {
  RemoteSettings s = parse_redis_url("redis://cache.example-1.net:7000/3", "x");
  CHECK(s.host == "cache.example-1.net");
  CHECK(s.port == 7000);
  CHECK(s.db == 3);
  CHECK(s.password.empty());
  s = parse_redis_url("redis://kiln:p%40ss:w@10.0.0.1:6380", "x");
  CHECK(s.user == "kiln");
  CHECK(s.password == "p@ss:w");
  CHECK(s.masked() == "redis://kiln:***@10.0.0.1:6380/0");
  s = parse_redis_url("redis://:secret@h", "x");
  CHECK(s.user.empty());
  CHECK(s.password == "secret");
  CHECK(s.port == 6379);
  s = parse_redis_url("redis://[::1]:7001/", "x");
  CHECK(s.host == "::1");
  CHECK(s.port == 7001);
  CHECK(s.masked() == "redis://[::1]:7001/0");
  for (const char* bad :
       {"", "h:6379", "http://h:1", "redis://", "redis://:1", "redis://h:", "redis://h:0",
        "redis://h:65536", "redis://h:12x", "redis://h/x", "redis://h/-1", "redis://h?db=1",
        "redis://h#x", "redis://h h", "redis://[::1", "redis://@h", "redis://u:%zz@h"}) {
    CAPTURE(bad);
    const std::string why = parse_error(bad);
    CHECK(why.find("KILN_REMOTE_CACHE=") != std::string::npos);
    CHECK(why.find("redis://[user:password@]host[:port][/db]") != std::string::npos);
  }
  for (const char* secret :
       {"redis://u:hunter22@h:99999", "redis://u:hunter22@h/x", "rediss://u:hunter22@h:6379",
        "redis://u:hunter22%g@h", "redis://u:hunter22@h?x", "redis://u:hunter22@"}) {
    CAPTURE(secret);
    const std::string why = parse_error(secret);
    CHECK(!why.empty());
    CHECK(why.find("hunter22") == std::string::npos);
  }
  CHECK(parse_error("rediss://h:6379").find("TLS tunnel") != std::string::npos);
}

TEST_CASE("remote cache: the environment's settings, and its bad values as CacheError") {
  ::setenv("KILN_REMOTE_CACHE", "redis://u@h:1", 1);
  ::setenv("KILN_REMOTE_CACHE_PASSWORD", "from-env", 1);
  ::setenv("KILN_REMOTE_CACHE_TIMEOUT_MS", "250", 1);
  std::optional<RemoteSettings> s = remote_settings_from_env();
  REQUIRE(s);
  CHECK(s->password == "from-env");
  CHECK(s->timeout == std::chrono::milliseconds(250));
  CHECK(s->masked() == "redis://u:***@h:1/0");
  for (const char* bad : {"0", "-5", "1.5", "abc", "60001", "99999999999"}) {
    ::setenv("KILN_REMOTE_CACHE_TIMEOUT_MS", bad, 1);
    CHECK_THROWS_AS(remote_settings_from_env(), kiln::CacheError);
  }
  ::setenv("KILN_REMOTE_CACHE", "redis:/h", 1);
  CHECK_THROWS_AS(remote_settings_from_env(), kiln::CacheError);
  ::unsetenv("KILN_REMOTE_CACHE");
  ::unsetenv("KILN_REMOTE_CACHE_PASSWORD");
  ::unsetenv("KILN_REMOTE_CACHE_TIMEOUT_MS");
  CHECK(!remote_settings_from_env());
}

TEST_CASE("remote cache: the lifetime and back-off from the environment; bad ones as CacheError") {
  ::setenv("KILN_REMOTE_CACHE", "redis://h:1", 1);
  std::optional<RemoteSettings> s = remote_settings_from_env();
  REQUIRE(s);
  CHECK(s->ttl == std::chrono::seconds(30 * 24 * 3600));  // the defaults
  CHECK(s->backoff == std::chrono::seconds(30));
  ::setenv("KILN_REMOTE_CACHE_TTL_S", "3600", 1);
  ::setenv("KILN_REMOTE_CACHE_BACKOFF_S", "0", 1);
  s = remote_settings_from_env();
  REQUIRE(s);
  CHECK(s->ttl == std::chrono::seconds(3600));
  CHECK(s->backoff == std::chrono::seconds(0));
  for (const char* bad : {"59", "-1", "1e6", "2h", "315360001", "9999999999", " 60"}) {
    CAPTURE(bad);
    ::setenv("KILN_REMOTE_CACHE_TTL_S", bad, 1);
    try {
      remote_settings_from_env();
      FAIL("a bad lifetime was taken");
    } catch (const kiln::CacheError& e) {
      CHECK(std::string(e.what()).find("KILN_REMOTE_CACHE_TTL_S=") == 0);
      CHECK(std::string(e.what()).find("from 60 to 315360000") != std::string::npos);
    }
  }
  ::setenv("KILN_REMOTE_CACHE_TTL_S", "60", 1);
  for (const char* bad : {"-1", "86401", "x", "1.5"}) {
    CAPTURE(bad);
    ::setenv("KILN_REMOTE_CACHE_BACKOFF_S", bad, 1);
    CHECK_THROWS_AS(remote_settings_from_env(), kiln::CacheError);
  }
  ::unsetenv("KILN_REMOTE_CACHE");
  ::unsetenv("KILN_REMOTE_CACHE_TTL_S");
  ::unsetenv("KILN_REMOTE_CACHE_BACKOFF_S");
}

TEST_CASE("remote cache: entries live for the TTL set, refreshed to it on a hit" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client()) return;
  RedisServer server;
  TempDir a, b;
  KernelCacheOptions o = machine(a.path(), server.url());
  o.remote->ttl = std::chrono::seconds(3600);
  Counting n;
  KernelCache(o).get(key_of(1), n.for_key(1));
  const std::string name = remote_key(key_of(1));
  const long ttl = std::stol(redis(server, {"TTL", name}));
  CHECK(ttl > 3000);
  CHECK(ttl <= 3600);
  redis(server, {"EXPIRE", name, "100"});
  o.dir = b.path();
  CHECK(KernelCache(o).get(key_of(1), n.for_key(1)).source == KernelCache::Source::remote);
  CHECK(std::stol(redis(server, {"TTL", name})) > 3000);
  CHECK(n.calls == 1);
}

TEST_CASE("remote cache: a compile is published; another machine gets it and writes it to disk" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client()) return;
  RedisServer server;
  TempDir a, b;
  Counting n;
  {
    KernelCache first(machine(a.path(), server.url()));
    CHECK(first.get(key_of(1), n.for_key(1)).source == KernelCache::Source::compiled);
  }
  CHECK(n.calls == 1);
  const std::string name = remote_key(key_of(1));
  CHECK(name == "kiln:v" + std::to_string(kFormatVersion) + ":" + key_of(1).hex());
  const long ttl = std::stol(redis(server, {"TTL", name}));
  CHECK(ttl > 29 * 24 * 3600);
  CHECK(ttl <= 30 * 24 * 3600);
  redis(server, {"EXPIRE", name, "100"});
  {
    KernelCache second(machine(b.path(), server.url()));
    const KernelCache::Result r = second.get(key_of(1), n.for_key(1));
    CHECK(r.source == KernelCache::Source::remote);
    CHECK(r.saved);
    CHECK(r.kernel->image == kernel_of(1).image);
    CHECK(second.counters().remote_hits == 1);
    CHECK(second.counters().compiles == 0);
  }
  CHECK(n.calls == 1);
  CHECK(std::stol(redis(server, {"TTL", name})) > 29 * 24 * 3600);  // refreshed by the hit
  KernelCache offline(std::optional<std::string>(b.path()));        // written through to b's disk
  CHECK(offline.get(key_of(1), n.for_key(1)).source == KernelCache::Source::disk);
}

TEST_CASE("remote cache: a plan's lookups of N kernels on a cold disk are one MGET" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client()) return;
  RedisServer server;
  TempDir a, b;
  {
    KernelCache first(machine(a.path(), server.url()));
    for (int i = 0; i < 8; ++i) first.get(key_of(i), [i] { return kernel_of(i); });
  }
  redis(server, {"CONFIG", "RESETSTAT"});
  KernelCacheOptions o = machine(b.path(), server.url());
  o.remote->lease = std::chrono::milliseconds(0);  // no compile leases: lookups alone here
  KernelCache second(o);
  std::vector<CacheKey> keys;
  for (int i = 0; i < 10; ++i) keys.push_back(key_of(i));  // 8 there, 2 not
  second.prefetch(keys);
  Counting n;
  for (int i = 0; i < 10; ++i) {
    CAPTURE(i);
    const auto r = second.get(key_of(i), n.for_key(i));
    CHECK(r.source == (i < 8 ? KernelCache::Source::remote : KernelCache::Source::compiled));
  }
  CHECK(n.calls == 2);
  CHECK(second.counters().remote_hits == 8);
  CHECK(second.counters().remote_misses == 2);
  const std::string stats = redis(server, {"INFO", "commandstats"});
  CAPTURE(stats);
  CHECK(stats.find("cmdstat_mget:calls=1,") != std::string::npos);
  CHECK(stats.find("cmdstat_get:") == std::string::npos);
}

TEST_CASE("remote cache: garbage, truncated and another key's entries are refused and recompiled" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client()) return;
  RedisServer server;
  TempDir a, b, c;
  {
    KernelCache first(machine(a.path(), server.url()));
    for (int i = 1; i <= 4; ++i) first.get(key_of(i), [i] { return kernel_of(i); });
  }
  const std::string good2 = redis(server, {"GET", remote_key(key_of(2))});
  REQUIRE(good2.size() > 100);
  redis(server, {"SET", remote_key(key_of(1)), "garbage, not an entry"});
  redis(server, {"SET", remote_key(key_of(2)), good2.substr(0, good2.size() / 2)});
  // Another key's entry (another arch's kernel of the same spec has another key).
  redis(server, {"SET", remote_key(key_of(3)), redis(server, {"GET", remote_key(key_of(4))})});
  Warnings warnings;
  Counting n;
  {
    KernelCache second(machine(b.path(), server.url()));
    for (int i = 1; i <= 3; ++i) {
      const auto r = second.get(key_of(i), n.for_key(i));
      CHECK(r.source == KernelCache::Source::compiled);
      CHECK(r.kernel->image == kernel_of(i).image);
    }
    CHECK(second.counters().remote_refused == 3);
    CHECK(second.counters().remote_hits == 0);
  }
  CHECK(n.calls == 3);
  CHECK(warnings.count("refused the entry of") == 3);
  CHECK(warnings.text().find(key_of(1).hex()) != std::string::npos);
  // The recompiled kernels were published again: a third machine gets good ones.
  KernelCache third(machine(c.path(), server.url()));
  for (int i = 1; i <= 3; ++i) {
    const auto r = third.get(key_of(i), n.for_key(i));
    CHECK(r.source == KernelCache::Source::remote);
    CHECK(r.kernel->image == kernel_of(i).image);
  }
  CHECK(n.calls == 3);
}

TEST_CASE("remote cache: a password is sent; a wrong one is one warning that does not show it" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client()) return;
  RedisServer server("s3cret-pw");
  const std::string at = "@127.0.0.1:" + std::to_string(server.port());
  TempDir a, b, c;
  Counting n;
  {
    KernelCache first(machine(a.path(), "redis://:s3cret-pw" + at + "/2"));
    first.get(key_of(1), n.for_key(1));
    CHECK(first.counters().remote_errors == 0);
  }
  KernelCache second(machine(b.path(), "redis://default:s3cret-pw" + at + "/2"));  // ACL user
  CHECK(second.get(key_of(1), n.for_key(1)).source == KernelCache::Source::remote);
  CHECK(n.calls == 1);
  Warnings warnings;
  KernelCache wrong(machine(c.path(), "redis://:not-it-pw" + at + "/2"));
  for (int i = 0; i < 3; ++i) wrong.get(key_of(i), n.for_key(i));
  CHECK(n.calls == 4);
  CHECK(warnings.count("kiln: the remote cache") == 1);
  CHECK(warnings.text().find("refused AUTH") != std::string::npos);
  CHECK(warnings.text().find("not-it-pw") == std::string::npos);
  CHECK(warnings.text().find("redis://:***@127.0.0.1") != std::string::npos);
}

TEST_CASE("remote cache: a server never started is one warning, and the layer goes off") {
  if (skip_without_client()) return;
  TempDir a;
  Warnings warnings;
  const auto start = std::chrono::steady_clock::now();
  Counting n;
  KernelCache c(machine(a.path(), "redis://127.0.0.1:" + std::to_string(kiln::test::free_port())));
  std::vector<CacheKey> keys{key_of(0), key_of(1)};
  c.prefetch(keys);
  for (int i = 0; i < 6; ++i)
    CHECK(c.get(key_of(i), n.for_key(i)).source == KernelCache::Source::compiled);
  CHECK(n.calls == 6);
  CHECK(seconds_since(start) < 20);  // generous: a refused connect takes microseconds
  CHECK(warnings.count("kiln: the remote cache") == 1);
  CHECK(warnings.text().find("is off for 30 s") != std::string::npos);
  CHECK(c.counters().remote_errors == 1);
  CHECK(c.counters().remote_misses == 0);
}

TEST_CASE("remote cache: a port that accepts and never answers costs one timeout per try") {
  if (skip_without_client()) return;
  kiln::test::SilentPort silent;
  TempDir a;
  Warnings warnings;
  RemoteSettings s = parse_redis_url("redis://:pw@127.0.0.1:" + std::to_string(silent.port()), "t");
  s.timeout = std::chrono::milliseconds(100);
  s.backoff = std::chrono::seconds(0);  // every call tries again: each one is bounded
  RemoteCache remote(s);
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    CHECK(remote.get({key_of(i)}).front().status == RemoteCache::Status::error);
    CHECK(!remote.put(key_of(i), kernel_of(i)));
    CHECK(seconds_since(start) < 10);  // two timeouts of 0.1 s; generous for busy machines
  }
  CHECK(remote.errors() == 6);
  CHECK(warnings.count("kiln: the remote cache") == 1);  // one outage, one warning
  // With the back-off, the layer is off after the first timeout: the run goes at local speed.
  KernelCacheOptions o = machine(a.path(), "redis://127.0.0.1:" + std::to_string(silent.port()));
  KernelCache c(o);
  Counting n;
  for (int i = 0; i < 20; ++i) c.get(key_of(i), n.for_key(i));
  CHECK(n.calls == 20);
  CHECK(c.counters().remote_errors == 1);
}

TEST_CASE("remote cache: a server killed mid-run; the run completes with correct kernels" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client()) return;
  auto server = std::make_unique<RedisServer>();
  const std::string url = server->url();
  TempDir a, b;
  Warnings warnings;
  Counting n;
  KernelCache first(machine(a.path(), url));
  for (int i = 0; i < 5; ++i) first.get(key_of(i), n.for_key(i));
  server->kill();
  for (int i = 5; i < 10; ++i) first.get(key_of(i), n.for_key(i));
  KernelCache second(machine(b.path(), url));
  for (int i = 0; i < 10; ++i) {
    const auto r = second.get(key_of(i), n.for_key(i));
    CHECK(r.source == KernelCache::Source::compiled);
    CHECK(r.kernel->image == kernel_of(i).image);
  }
  CHECK(n.calls == 20);
  CHECK(first.counters().remote_errors == 1);
  CHECK(warnings.count("kiln: the remote cache") == 2);  // one per machine
}
