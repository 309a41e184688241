// Tuning records shared through the remote layer (cache/remote_tuning.hpp), against a real
// redis-server started by the tests.

#include "cache/remote_tuning.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdio>

#include "cache/sign.hpp"
#include "tests/cache/redis_server.hpp"
#include "tests/cache/remote_fixtures.hpp"
#include "tests/support.hpp"

using namespace kiln::cache;
using kiln::test::redis;
using kiln::test::RedisServer;
using kiln::test::skip_without_client;
using kiln::test::Warnings;

namespace {

constexpr const char* kGpu = "NVIDIA H100 80GB HBM3";

TuningRecord record(const std::string& signature, double us, int rows, const char* gpu = kGpu) {
  TuningRecord r;
  r.signature = signature;
  r.kernel = "softmax_rows_" + signature;
  r.shape_class = "exact [4096,4096]";
  r.dtype = "bf16";
  r.gpu = gpu;
  r.arch = "sm_90a";
  r.sm_count = 132;
  r.driver = "13.0";
  r.winner = {{"ROWS", rows}};
  r.winner_us = us;
  r.default_us = 2 * us;
  return r;
}

RemoteSettings settings(const RedisServer& server, const std::string& key = "") {
  RemoteSettings s = parse_redis_url(server.url(), "test");
  s.sign_key = key;
  return s;
}

}  // namespace

TEST_CASE("remote tuning: for one kernel and one GPU the faster record wins" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client()) return;
  RedisServer server;
  RemoteCache a(settings(server)), b(settings(server));
  CHECK(publish_tuning(a, record("s1", 10.0, 4)));
  CHECK(!publish_tuning(b, record("s1", 20.0, 8)));  // slower: the faster one stays
  CHECK(!publish_tuning(b, record("s1", 10.0, 8)));  // as fast: the first one stays
  CHECK(publish_tuning(b, record("s2", 7.0, 2)));
  RemoteTuning got = fetch_tuning(a, kGpu);
  CHECK(got.reached);
  CHECK(got.refused == 0);
  REQUIRE(got.records.records().size() == 2);
  CHECK(got.records.find("s1")->winner.at("ROWS") == 4);
  CHECK(publish_tuning(b, record("s1", 5.5, 16)));  // faster: it replaces it
  got = fetch_tuning(a, kGpu);
  CHECK(got.records.find("s1")->winner.at("ROWS") == 16);
  CHECK(got.records.find("s1")->winner_us == doctest::Approx(5.5));
  CHECK(fetch_tuning(a, "NVIDIA A100-SXM4-80GB").records.records().empty());  // GPU by GPU
  const long ttl = std::stol(redis(server, {"TTL", remote_tuning_key(kGpu)}));
  CHECK(ttl > 29 * 24 * 3600);
}

TEST_CASE("remote tuning: an engine's local records stay; the remote fills the kernels it lacks") {
  TuningDb local(kGpu), remote(kGpu);
  local.put(record("s1", 9.0, 4));
  remote.put(record("s1", 1.0, 32));  // faster, but the local record is this machine's own
  remote.put(record("s2", 3.0, 8));
  CHECK(fill_missing(local, remote) == 1);
  CHECK(local.find("s1")->winner.at("ROWS") == 4);
  CHECK(local.find("s2")->winner.at("ROWS") == 8);
  CHECK(fill_missing(local, remote) == 0);
}

TEST_CASE("remote tuning: records are signed; unsigned, foreign and malformed ones are refused" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client()) return;
  if (!signing_built()) {
    MESSAGE("skipped: kiln was built without OpenSSL (KILN_OPENSSL, libssl-dev)");
    return;
  }
  RedisServer server;
  const std::string key = "0123456789abcdef-fleet-key";
  RemoteCache signer(settings(server, key));
  CHECK(publish_tuning(signer, record("good", 4.0, 4)));
  const std::string hash = remote_tuning_key(kGpu);
  CHECK(redis(server, {"HGET", hash, "good"}).substr(0, 8) == "KILNSIG1");
  TuningDb other_gpu("NVIDIA A100-SXM4-80GB");
  other_gpu.put(record("foreign", 1.0, 2, "NVIDIA A100-SXM4-80GB"));
  TuningDb wrong_kernel(kGpu);
  wrong_kernel.put(record("good", 1.0, 64));
  redis(server, {"HSET", hash, "unsigned", "{\"gpu\":\"x\",\"records\":[]}", "us:unsigned", "1"});
  redis(server, {"HSET", hash, "foreign", sign_body(key, other_gpu.to_json())});
  redis(server, {"HSET", hash, "renamed", sign_body(key, wrong_kernel.to_json())});
  redis(server, {"HSET", hash, "malformed", sign_body(key, "{not json")});
  Warnings warnings;
  RemoteTuning got = fetch_tuning(signer, kGpu);
  CHECK(got.refused == 4);
  REQUIRE(got.records.records().size() == 1);
  CHECK(got.records.find("good")->winner.at("ROWS") == 4);
  CHECK(warnings.count("refused the tuning record of") == 4);
  CHECK(warnings.text().find("it is unsigned") != std::string::npos);
  CHECK(warnings.text().find("another GPU") != std::string::npos);
  CHECK(warnings.text().find(key) == std::string::npos);
  // A reader with another key refuses even the good one.
  RemoteCache stranger(settings(server, "fedcba9876543210-other-key"));
  got = fetch_tuning(stranger, kGpu);
  CHECK(got.records.records().empty());
  CHECK(got.refused == 5);
}

TEST_CASE("remote tuning: an engine's records: its file first, then its GPU's remote records" *
          doctest::skip(!RedisServer::installed())) {
  if (skip_without_client()) return;
  RedisServer server;
  kiln::test::TempDir dir, broken;
  TuningDb file(kGpu);
  file.put(record("s1", 9.0, 4));
  file.save(dir.path());
  RemoteCache publisher(settings(server));
  CHECK(publish_tuning(publisher, record("s1", 1.0, 32)));
  CHECK(publish_tuning(publisher, record("s2", 3.0, 8)));
  CHECK(publish_tuning(publisher, record("s3", 3.0, 8, "NVIDIA A100-SXM4-80GB")));
  redis(server, {"HSET", remote_tuning_key(kGpu), "s4", "garbage"});
  Warnings warnings;
  KernelCache cache(kiln::test::machine(dir.path(), server.url()));
  TuningDb got = tuning_records(dir.path(), kGpu, cache);
  CHECK(got.gpu() == kGpu);
  CHECK(got.records().size() == 2);
  CHECK(got.find("s1")->winner.at("ROWS") == 4);  // this machine's own measurement stays
  CHECK(got.find("s2")->winner.at("ROWS") == 8);  // the fleet's fills the gap
  CHECK(!got.find("s3"));                         // another GPU's: never here
  CHECK(cache.counters().remote_refused == 1);    // the garbage one
  // A records file that cannot be parsed: one warning, and the remote's records still come.
  REQUIRE(::mkdir((broken.path() + "/tuning").c_str(), 0700) == 0);
  {
    std::FILE* f = std::fopen(TuningDb::path(broken.path(), kGpu).c_str(), "w");
    REQUIRE(f);
    std::fputs("{not json", f);
    std::fclose(f);
  }
  got = tuning_records(broken.path(), kGpu, cache);
  CHECK(got.records().size() == 2);
  CHECK(got.find("s1")->winner.at("ROWS") == 32);
  CHECK(warnings.count("tuning records not used") == 1);
  // Without a remote layer: the file alone.
  KernelCache local(std::optional<std::string>(dir.path()));
  CHECK(tuning_records(dir.path(), kGpu, local).records().size() == 1);
}
