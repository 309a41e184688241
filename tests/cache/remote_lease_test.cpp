// Compile once across the fleet: the lease on a key (RemoteCache::claim), against a real
// redis-server started by the tests. No test here depends on timing: each asserts counts, and
// every wait is bounded by a lease far longer than the work.

#include <doctest/doctest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <kiln/error.hpp>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "cache/kernel_cache.hpp"
#include "tests/cache/fixtures.hpp"
#include "tests/cache/redis_server.hpp"
#include "tests/cache/remote_fixtures.hpp"
#include "tests/support.hpp"

using namespace kiln::cache;
using kiln::test::kernel_of;
using kiln::test::key_of;
using kiln::test::machine;
using kiln::test::redis;
using kiln::test::RedisServer;
using kiln::test::skip_without_client;
using kiln::test::TempDir;

namespace {

// Threads that start together: each waits until all have arrived.
class Barrier {
 public:
  explicit Barrier(int n) : left_(n) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (--left_ == 0) return ready_.notify_all();
    ready_.wait(lock, [this] { return left_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  int left_;
};

KernelCacheOptions leased(const std::string& dir, const std::string& url,
                          std::chrono::milliseconds lease) {
  KernelCacheOptions o = machine(dir, url);
  o.remote->lease = lease;
  o.remote->timeout = std::chrono::milliseconds(5000);  // a loaded CI machine is no outage
  return o;
}

}  // namespace

TEST_CASE("remote lease: KILN_REMOTE_CACHE_LEASE_MS is read; a bad one is a CacheError") {
  ::setenv("KILN_REMOTE_CACHE", "redis://h:1", 1);
  std::optional<RemoteSettings> s = remote_settings_from_env();
  REQUIRE(s);
  CHECK(s->lease == std::chrono::milliseconds(20000));
  for (const char* ok : {"0", "100", "600000"}) {
    ::setenv("KILN_REMOTE_CACHE_LEASE_MS", ok, 1);
    CHECK(remote_settings_from_env()->lease == std::chrono::milliseconds(std::stol(ok)));
  }
  for (const char* bad : {"1", "99", "600001", "-5", "20s", "1e4"}) {
    CAPTURE(bad);
    ::setenv("KILN_REMOTE_CACHE_LEASE_MS", bad, 1);
    try {
      remote_settings_from_env();
      FAIL("a bad lease was taken");
    } catch (const kiln::CacheError& e) {
      CHECK(std::string(e.what()).find("KILN_REMOTE_CACHE_LEASE_MS=") == 0);
    }
  }
  ::unsetenv("KILN_REMOTE_CACHE");
  ::unsetenv("KILN_REMOTE_CACHE_LEASE_MS");
}

TEST_CASE("remote lease: 8 machines missing one kernel at once compile it once" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client()) return;
  RedisServer server;
  constexpr int kMachines = 8;
  std::vector<TempDir> dirs(kMachines);
  std::vector<std::unique_ptr<KernelCache>> caches;
  for (int m = 0; m < kMachines; ++m)
    caches.push_back(std::make_unique<KernelCache>(
        leased(dirs[m].path(), server.url(), std::chrono::milliseconds(60000))));
  std::atomic<int> compiles{0};
  Barrier start(kMachines);
  std::vector<KernelCache::Source> sources(kMachines);
  std::vector<std::thread> threads;
  for (int m = 0; m < kMachines; ++m)
    threads.emplace_back([&, m] {
      start.arrive_and_wait();
      sources[m] = caches[m]
                       ->get(key_of(7),
                             [&] {
                               ++compiles;
                               // Long enough that the others' lookups come while it compiles.
                               std::this_thread::sleep_for(std::chrono::milliseconds(300));
                               return kernel_of(7);
                             })
                       .source;
    });
  for (std::thread& t : threads) t.join();
  CHECK(compiles == 1);
  int remote = 0, waits = 0;
  for (int m = 0; m < kMachines; ++m) {
    remote += sources[m] == KernelCache::Source::remote;
    waits += int(caches[m]->counters().remote_waits);
    CHECK(caches[m]->counters().remote_errors == 0);
  }
  CHECK(remote == kMachines - 1);
  CHECK(waits <= kMachines - 1);
  CHECK(redis(server, {"EXISTS", lease_key(key_of(7))}) == "0");  // released after the publish
  for (auto& c : caches)
    CHECK(c->get(key_of(7), [] { return kernel_of(0); }).kernel->image == kernel_of(7).image);
}

TEST_CASE("remote lease: a dead holder's lease expires, and one waiter compiles in its place" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client()) return;
  RedisServer server;
  // A machine that took the lease and died: nothing releases it, it expires after 1.5 s.
  REQUIRE(redis(server, {"SET", lease_key(key_of(3)), "dead-host:1:0", "NX", "PX", "1500"}) ==
          "OK");
  constexpr int kMachines = 3;
  std::vector<TempDir> dirs(kMachines);
  std::vector<std::unique_ptr<KernelCache>> caches;
  for (int m = 0; m < kMachines; ++m)  // their own leases: far longer than a compile
    caches.push_back(std::make_unique<KernelCache>(
        leased(dirs[m].path(), server.url(), std::chrono::milliseconds(60000))));
  std::atomic<int> compiles{0};
  std::vector<std::thread> threads;
  std::vector<KernelCache::Source> sources(kMachines);
  for (int m = 0; m < kMachines; ++m)
    threads.emplace_back([&, m] {
      sources[m] = caches[m]->get(key_of(3), [&] { return ++compiles, kernel_of(3); }).source;
    });
  for (std::thread& t : threads) t.join();
  CHECK(compiles == 1);  // the dead holder's lease was taken over by one of them
  int remote = 0;
  for (int m = 0; m < kMachines; ++m) remote += sources[m] == KernelCache::Source::remote;
  CHECK(remote == kMachines - 1);
  CHECK(redis(server, {"EXISTS", lease_key(key_of(3))}) == "0");  // the new holder's, released
}

TEST_CASE("remote lease: a compile that fails releases its lease; leases off compile anyway" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client()) return;
  RedisServer server;
  TempDir a, b, c;
  KernelCache first(leased(a.path(), server.url(), std::chrono::milliseconds(60000)));
  CHECK_THROWS_AS(
      first.get(key_of(1),
                []() -> kiln::CompiledKernel { throw std::runtime_error("a compile that fails"); }),
      std::runtime_error);
  CHECK(redis(server, {"EXISTS", lease_key(key_of(1))}) == "0");
  // With a lease held elsewhere and leases off (0), a machine compiles without waiting.
  REQUIRE(redis(server, {"SET", lease_key(key_of(2)), "busy-host:1:0", "PX", "600000"}) == "OK");
  KernelCache unleased(leased(b.path(), server.url(), std::chrono::milliseconds(0)));
  int compiles = 0;
  CHECK(unleased.get(key_of(2), [&] { return ++compiles, kernel_of(2); }).source ==
        KernelCache::Source::compiled);
  CHECK(compiles == 1);
  CHECK(unleased.counters().remote_waits == 0);
  CHECK(redis(server, {"GET", lease_key(key_of(2))}) == "busy-host:1:0");  // not another's to drop
  // A machine with leases on now gets the entry that machine published, without waiting.
  KernelCache third(leased(c.path(), server.url(), std::chrono::milliseconds(60000)));
  CHECK(third.get(key_of(2), [&] { return ++compiles, kernel_of(2); }).source ==
        KernelCache::Source::remote);
  CHECK(compiles == 1);
}

TEST_CASE("remote lease: a holder killed mid-compile; the others wait out its lease, one compiles" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client()) return;
  RedisServer server;
  TempDir dead_dir;
  int compiling[2];
  REQUIRE(::pipe(compiling) == 0);
  const pid_t holder = ::fork();
  if (holder == 0) {  // takes the lease, says so mid-compile, and hangs there until killed
    ::alarm(120);
    ::close(compiling[0]);
    KernelCache c(leased(dead_dir.path(), server.url(), std::chrono::milliseconds(1500)));
    c.get(key_of(5), [&]() -> kiln::CompiledKernel {
      const char byte = 1;
      if (::write(compiling[1], &byte, 1) != 1) ::_exit(2);
      for (;;) ::pause();
    });
    ::_exit(3);
  }
  REQUIRE(holder > 0);
  ::close(compiling[1]);
  char byte = 0;
  REQUIRE(::read(compiling[0], &byte, 1) == 1);
  ::close(compiling[0]);
  ::kill(holder, SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  int status = 0;
  ::waitpid(holder, &status, 0);
  CHECK(WIFSIGNALED(status));
  constexpr int kMachines = 3;
  std::vector<TempDir> dirs(kMachines);
  std::vector<std::unique_ptr<KernelCache>> caches;
  for (int m = 0; m < kMachines; ++m)
    caches.push_back(std::make_unique<KernelCache>(
        leased(dirs[m].path(), server.url(), std::chrono::milliseconds(60000))));
  std::atomic<int> compiles{0};
  std::vector<KernelCache::Source> sources(kMachines);
  std::vector<std::thread> threads;
  for (int m = 0; m < kMachines; ++m)
    threads.emplace_back([&, m] {
      sources[m] = caches[m]->get(key_of(5), [&] { return ++compiles, kernel_of(5); }).source;
    });
  for (std::thread& t : threads) t.join();
  // Reported, not asserted: at most the dead holder's lease (1.5 s) and a compile.
  MESSAGE("the others had their kernel "
          << std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count()
          << " s after the holder was killed (its lease: 1.5 s)");
  CHECK(compiles == 1);
  int remote = 0;
  for (int m = 0; m < kMachines; ++m) remote += sources[m] == KernelCache::Source::remote;
  CHECK(remote == kMachines - 1);
  CHECK(redis(server, {"EXISTS", lease_key(key_of(5))}) == "0");
}

TEST_CASE("remote lease: the server killed while a machine waits on a lease; it compiles" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client()) return;
  auto server = std::make_unique<RedisServer>();
  REQUIRE(redis(*server, {"SET", lease_key(key_of(6)), "busy-host:1:0", "PX", "600000"}) == "OK");
  TempDir dir;
  kiln::test::Warnings warnings;
  KernelCache c(leased(dir.path(), server->url(), std::chrono::milliseconds(600000)));
  int compiles = 0;
  std::thread waiter([&] {
    CHECK(c.get(key_of(6), [&] { return ++compiles, kernel_of(6); }).source ==
          KernelCache::Source::compiled);
  });
  // Once it polls (its SET NX tried twice: the claim, then a poll), the server goes.
  for (int i = 0; i < 6000; ++i) {
    const std::string stats = redis(*server, {"INFO", "commandstats"});
    const auto at = stats.find("cmdstat_set:calls=");
    if (at != std::string::npos && std::stol(stats.substr(at + 18)) >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  server->kill();
  waiter.join();
  CHECK(compiles == 1);
  CHECK(c.counters().remote_waits == 1);
  CHECK(c.counters().remote_errors == 1);
  CHECK(warnings.count("kiln: the remote cache") == 1);
}
