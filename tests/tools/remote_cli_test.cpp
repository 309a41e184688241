// The CLI and the fleet's remote cache: `kiln precompile --remote` fills it (kernels already on
// disk too), `kiln cache push` publishes local entries, `kiln cache pull` fetches a manifest's
// kernels, `kiln cache stats` shows the remote's counts. A real redis-server; no GPU.

#include <doctest/doctest.h>

#include <algorithm>

#include "tests/cache/redis_server.hpp"
#include "tests/support.hpp"

namespace {

using kiln::test::kiln_cli;
using kiln::test::RedisServer;
using kiln::test::TempDir;

// The number of entries (kiln:v<format>:<key hex>, not leases nor tuning records) held.
int entries_in(const RedisServer& server) {
  const std::string pattern = "kiln:v" + std::to_string(kiln::cache::kFormatVersion) + ":[0-9a-f]*";
  const std::optional<std::string> keys = server.command({"KEYS", pattern});
  REQUIRE(keys);
  return int(std::count(keys->begin(), keys->end(), '\n'));
}

// A manifest of two kernels (silu and add over bf16), recorded offline.
std::string manifest_in(const TempDir& tmp) {
  const std::string path = tmp / "app.manifest";
  kiln::Engine e(kiln::test::offline("sm_90a", "", path));
  kiln::TensorView x;
  x.shape = {4096};
  x.dtype = kiln::DType::bf16;
  kiln::precompile(e, "silu", {x});
  kiln::precompile(e, "add", {x, x});
  return path;
}

}  // namespace

TEST_CASE("cli: precompile --remote, cache push, pull and stats with the fleet's cache" *
          doctest::skip(!RedisServer::installed())) {
  if (kiln::test::skip_without_client()) return;
  RedisServer server;
  TempDir tmp;
  const std::string manifest = manifest_in(tmp);
  const std::string env = "KILN_REMOTE_CACHE=" + server.url();
  const std::string farm = " --cache-dir " + (tmp / "farm");
  // Compiled before the fleet had a remote: on the farm's disk only.
  REQUIRE(kiln_cli("precompile " + manifest + " --arch sm_90a" + farm).status == 0);
  CHECK(entries_in(server) == 0);
  const auto no_remote = kiln_cli("precompile --remote " + manifest + " --arch sm_90a" + farm);
  CHECK(no_remote.status != 0);
  CHECK(no_remote.output.find("KILN_REMOTE_CACHE is not set") != std::string::npos);
  // --remote publishes what it compiles and what it finds cached.
  const auto pre = kiln_cli("precompile --remote " + manifest + " --arch sm_80,sm_90a" + farm, env);
  CAPTURE(pre.output);
  CHECK(pre.status == 0);
  CHECK(pre.output.find("2 compiled, 2 already cached") != std::string::npos);
  CHECK(entries_in(server) == 4);
  // A fresh machine pulls the manifest's kernels: one round trip, written to its disk.
  const std::string machine = " --cache-dir " + (tmp / "machine");
  const auto pull = kiln_cli("cache" + machine + " pull " + manifest + " --arch sm_90a", env);
  CAPTURE(pull.output);
  CHECK(pull.status == 0);
  CHECK(pull.output.find("pulled 2 kernels") != std::string::npos);
  CHECK(pull.output.find("0 are not in the remote") != std::string::npos);
  CHECK(kiln_cli("cache" + machine + " explain " + manifest + " --arch sm_90a").status == 0);
  const auto stats = kiln_cli("cache" + machine + " stats", env);
  CAPTURE(stats.output);
  CHECK(stats.output.find("remote (" + server.url() + "/0): 2 hits, 0 misses") !=
        std::string::npos);
  // push: the farm's entries of one arch, after the server lost everything.
  REQUIRE(server.command({"FLUSHALL"}) == std::string("OK"));
  const auto push = kiln_cli("cache" + farm + " push --arch sm_80", env);
  CAPTURE(push.output);
  CHECK(push.status == 0);
  CHECK(push.output.find("pushed 2 entries") != std::string::npos);
  CHECK(push.output.find("2 of other archs left") != std::string::npos);
  CHECK(entries_in(server) == 2);
}

TEST_CASE("cli: cache push and pull need a remote, and say when it fails") {
  if (kiln::test::skip_without_client()) return;
  TempDir tmp;
  const std::string manifest = manifest_in(tmp);
  const std::string dir = " --cache-dir " + (tmp / "cache");
  REQUIRE(kiln_cli("precompile " + manifest + " --arch sm_90a" + dir).status == 0);
  for (const std::string& cmd :
       std::vector<std::string>{"push", "pull " + manifest + " --arch sm_90a"}) {
    CAPTURE(cmd);
    const auto r = kiln_cli("cache" + dir + " " + cmd);
    CHECK(r.status != 0);
    CHECK(r.output.find("set KILN_REMOTE_CACHE=redis://") != std::string::npos);
  }
  const std::string dead =
      "KILN_REMOTE_CACHE=redis://127.0.0.1:" + std::to_string(kiln::test::free_port());
  const auto push = kiln_cli("cache" + dir + " push", dead);
  CHECK(push.status != 0);
  CHECK(push.output.find("failed after 0 entries were pushed") != std::string::npos);
  const auto pull = kiln_cli(
      "cache --cache-dir " + (tmp / "other") + " pull " + manifest + " --arch sm_90a", dead);
  CHECK(pull.status != 0);
  CHECK(pull.output.find("failed after 0 pulled") != std::string::npos);
}
