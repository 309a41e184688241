// A plan's kernels and the remote cache layer: one round trip for all of them on a cold disk.
#include <doctest/doctest.h>

#include <cstdlib>
#include <kiln/graph.hpp>

#include "tests/cache/redis_server.hpp"
#include "tests/support.hpp"

namespace {

// INFO commandstats of the server, as text.
std::string command_stats(const kiln::test::RedisServer& server, const char* command) {
  redisContext* c = server.client();
  REQUIRE(c);
  auto* r = static_cast<redisReply*>(redisCommand(c, command));
  REQUIRE(r);
  std::string out = r->str ? std::string(r->str, r->len) : "";
  freeReplyObject(r);
  redisFree(c);
  return out;
}

}  // namespace

TEST_CASE("a plan's kernels on a cold disk come from the remote cache in one round trip" *
          doctest::skip(!kiln::test::RedisServer::installed())) {
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
  command_stats(server, "CONFIG RESETSTAT");
  {  // a cold fleet: one lookup, then the compiles' stores
    kiln::Engine first(kiln::test::offline("sm_90a", tmp.path() + "/first"));
    for (const auto& r : plan.compile(first)) CHECK(r.source == "compiled");
    CHECK(first.counters().remote_misses == 4);
  }
  const std::string cold = command_stats(server, "INFO commandstats");
  CAPTURE(cold);
  CHECK(cold.find("cmdstat_mget:calls=1,") != std::string::npos);
  CHECK(cold.find("cmdstat_set:calls=4,") != std::string::npos);
  command_stats(server, "CONFIG RESETSTAT");
  kiln::Engine second(kiln::test::offline("sm_90a", tmp.path() + "/second"));
  ::unsetenv("KILN_REMOTE_CACHE");
  for (const auto& r : plan.compile(second)) CHECK(r.source == "remote");
  CHECK(second.counters().compiles == 0);
  CHECK(second.counters().remote_hits == 4);
  const std::string stats = command_stats(server, "INFO commandstats");
  CAPTURE(stats);
  CHECK(stats.find("cmdstat_mget:calls=1,") != std::string::npos);
  CHECK(stats.find("cmdstat_get:") == std::string::npos);
  CHECK(stats.find("cmdstat_set:") == std::string::npos);
  kiln::Engine third(kiln::test::offline("sm_90a", tmp.path() + "/second"));  // written through
  for (const auto& r : plan.compile(third)) CHECK(r.source == "disk");
}
