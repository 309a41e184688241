// The C API's cache stats count the remote layer: an engine made with KILN_REMOTE_CACHE set
// publishes what it compiles, and another machine's engine (its own disk cache) takes it from
// the remote instead of compiling.
#include <cstdlib>

#include "tests/cache/redis_server.hpp"
#include "tests/capi/capi_support.hpp"

using kiln::test::EnginePtr;
using kiln::test::GraphPtr;
using kiln::test::PlanPtr;

namespace {

// KILN_REMOTE_CACHE set to `url` while it lives (engines read it when they are made).
struct RemoteEnv {
  explicit RemoteEnv(const std::string& url) { ::setenv("KILN_REMOTE_CACHE", url.c_str(), 1); }
  ~RemoteEnv() { ::unsetenv("KILN_REMOTE_CACHE"); }
};

// The stats of an offline engine on `dir` that compiled the softmax graph's plan.
kiln_cache_stats compile_on(const std::string& dir) {
  GraphPtr g = kiln::test::graph_of(kiln::test::kSoftmaxGraph);
  kiln_plan* p = nullptr;
  KILN_REQUIRE_OK(kiln_plan_create(g.get(), 1, &p));
  PlanPtr plan(p);
  kiln_engine* raw = nullptr;
  KILN_REQUIRE_OK(kiln_engine_create_offline("sm_90a", dir.c_str(), &raw));
  EnginePtr e(raw);
  KILN_REQUIRE_OK(kiln_plan_compile(plan.get(), e.get(), nullptr));
  kiln_cache_stats stats{};
  KILN_REQUIRE_OK(kiln_engine_cache_stats(e.get(), &stats));
  return stats;
}

}  // namespace

TEST_CASE("c api: the cache stats count the remote layer's misses and hits" *
          doctest::skip(!kiln::test::RedisServer::installed())) {
  if (kiln::test::skip_without_client()) return;
  kiln::test::RedisServer server;
  kiln::test::TempDir a, b;
  RemoteEnv env(server.url());
  const kiln_cache_stats first = compile_on(a.path());
  CHECK(first.compiles == 1);
  CHECK(first.remote_misses >= 1);
  CHECK(first.remote_hits == 0);
  CHECK(first.remote_errors == 0);
  const kiln_cache_stats second = compile_on(b.path());  // another machine: its own disk
  CHECK(second.compiles == 0);
  CHECK(second.remote_hits == 1);
  CHECK(second.remote_refused == 0);
}
