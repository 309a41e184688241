// A plan's kernels and the remote cache layer: one round trip for all of them on a cold disk.
#include <doctest/doctest.h>

#include <cstdlib>
#include <kiln/error.hpp>
#include <kiln/graph.hpp>

#include "tests/cache/redis_server.hpp"
#include "tests/support.hpp"

namespace {

// A command's reply (INFO commandstats, CONFIG RESETSTAT), as text.
std::string command_stats(const kiln::test::RedisServer& server,
                          const std::vector<std::string>& command) {
  const std::optional<std::string> out = server.command(command);
  REQUIRE(out);
  return *out;
}

}  // namespace

TEST_CASE("a plan's kernels on a cold disk come from the remote cache in one round trip" *
          doctest::skip(!kiln::test::RedisServer::installed())) {
  if (kiln::test::skip_without_client()) return;
  kiln::test::RedisServer server;
  kiln::test::TempDir tmp;
  kiln::Graph g;  // four kernels unfused
  auto a = g.input("a", {1000}, kiln::DType::f32);
  auto b = g.input("b", {1000}, kiln::DType::bf16);
  g.output(kiln::silu(a), "s");
  g.output(kiln::exp(b), "e");
  g.output(a + a, "p");
  g.output(b * 2.0, "m");
  const kiln::Plan plan(g, false);
  ::setenv("KILN_REMOTE_CACHE", server.url().c_str(), 1);
  command_stats(server, {"CONFIG", "RESETSTAT"});
  {  // a cold fleet: one lookup, then the compiles' stores
    kiln::Engine first(kiln::test::offline("sm_90a", tmp.path() + "/first"));
    for (const auto& r : plan.compile(first)) CHECK(r.source == "compiled");
    CHECK(first.counters().remote_misses == 4);
  }
  const std::string cold = command_stats(server, {"INFO", "commandstats"});
  CAPTURE(cold);
  CHECK(cold.find("cmdstat_mget:calls=1,") != std::string::npos);
  // Per kernel compiled: a lease taken (SET NX, with a GET in its round trip), the entry stored
  // (SET), the lease released (EVAL).
  CHECK(cold.find("cmdstat_set:calls=8,") != std::string::npos);
  CHECK(cold.find("cmdstat_eval:calls=4,") != std::string::npos);
  command_stats(server, {"CONFIG", "RESETSTAT"});
  kiln::Engine second(kiln::test::offline("sm_90a", tmp.path() + "/second"));
  ::unsetenv("KILN_REMOTE_CACHE");
  for (const auto& r : plan.compile(second)) CHECK(r.source == "remote");
  CHECK(second.counters().compiles == 0);
  CHECK(second.counters().remote_hits == 4);
  const std::string stats = command_stats(server, {"INFO", "commandstats"});
  CAPTURE(stats);
  CHECK(stats.find("cmdstat_mget:calls=1,") != std::string::npos);
  CHECK(stats.find("cmdstat_get:") == std::string::npos);
  CHECK(stats.find("cmdstat_set:") == std::string::npos);
  kiln::Engine third(kiln::test::offline("sm_90a", tmp.path() + "/second"));  // written through
  for (const auto& r : plan.compile(third)) CHECK(r.source == "disk");
}

TEST_CASE("KILN_REMOTE_CACHE to a dead port: a warning with Redis support; without it, an error") {
  struct Unset {
    ~Unset() { ::unsetenv("KILN_REMOTE_CACHE"); }
  } unset;
  kiln::test::TempDir tmp;
  const std::string url = "redis://:secret-pw@127.0.0.1:" + std::to_string(kiln::test::free_port());
  ::setenv("KILN_REMOTE_CACHE", url.c_str(), 1);
  kiln::Graph g;
  g.output(kiln::silu(g.input("a", {1000}, kiln::DType::f32)), "s");
  const kiln::Plan plan(g, false);
  if (kiln::cache::remote_cache_built()) {  // the layer goes off; the run is a local one
    kiln::Engine e(kiln::test::offline("sm_90a", tmp.path()));
    for (const auto& r : plan.compile(e)) CHECK(r.source == "compiled");
    CHECK(e.counters().remote_errors == 1);
    return;
  }
  MESSAGE("built without Redis support: KILN_REMOTE_CACHE must be a CacheError");
  try {
    kiln::Engine e(kiln::test::offline("sm_90a", tmp.path()));
    FAIL("an engine was made with KILN_REMOTE_CACHE set in a kiln without Redis support");
  } catch (const kiln::CacheError& e) {
    const std::string what = e.what();
    CAPTURE(what);
    CHECK(what.find("built without Redis support") != std::string::npos);
    CHECK(what.find("libhiredis-dev") != std::string::npos);
    CHECK(what.find("unset KILN_REMOTE_CACHE") != std::string::npos);
    CHECK(what.find("secret-pw") == std::string::npos);
  }
}
