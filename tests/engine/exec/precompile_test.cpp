#include "engine/exec/precompile.hpp"

#include <cerrno>
#include <set>

#include "cache/bundle.hpp"
#include "cache/disk_cache.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/manifest.hpp"
#include "ops/op.hpp"
#include "tests/support.hpp"

namespace {

// Specs of a few real ops, as an app would record them.
std::vector<kiln::KernelSpec> some_specs() {
  kiln::test::TempDir tmp;
  kiln::Engine e(kiln::test::offline("sm_80", "", tmp / "m"));
  kiln::TensorView x;
  x.shape = {1000};
  x.dtype = kiln::DType::bf16;
  for (const char* op : {"exp", "tanh", "relu", "sigmoid"}) kiln::precompile(e, op, {x});
  return kiln::cache::read_manifest(tmp / "m");
}

}  // namespace

TEST_CASE(
    "precompile: every spec x arch into the cache, in parallel; a second run compiles nothing") {
  kiln::test::TempDir tmp;
  const auto specs = some_specs();
  kiln::PrecompileOptions o;
  o.archs = {"sm_80", "sm_90a"};
  o.jobs = 2;
  int progress_calls = 0;
  {
    kiln::cache::KernelCache c(std::optional<std::string>(tmp.path()));
    const auto s =
        kiln::precompile_specs(specs, o, c, [&](int done, int total, const kiln::PrecompileItem&) {
          ++progress_calls;
          CHECK(done <= total);
        });
    CHECK(s.compiled == 8);
    CHECK(s.failed == 0);
    CHECK(progress_calls == 8);
  }
  kiln::cache::KernelCache again(std::optional<std::string>(tmp.path()));
  const auto s = kiln::precompile_specs(specs, o, again);
  CHECK(s.cached == 8);
  CHECK(s.compiled == 0);
  CHECK(kiln::cache::DiskCache(tmp.path()).list().size() == 8);
}

TEST_CASE("precompile: shards split the work exactly") {
  const auto specs = some_specs();
  std::set<std::string> seen;
  int total = 0;
  for (int i = 0; i < 3; ++i) {
    kiln::cache::KernelCache c(std::nullopt);
    kiln::PrecompileOptions o;
    o.archs = {"sm_80", "sm_90a"};
    o.shard_index = i;
    o.shard_count = 3;
    const auto s =
        kiln::precompile_specs(specs, o, c, [&](int, int, const kiln::PrecompileItem& item) {
          CHECK(seen.insert(item.name + "@" + item.arch).second);
        });
    total += s.total;
  }
  CHECK(total == 8);
  CHECK(seen.size() == 8);
  kiln::test::TempDir tmp;
  kiln::cache::KernelCache c(std::optional<std::string>(tmp.path()));
  kiln::PrecompileOptions bad;
  bad.archs = {"sm_80"};
  bad.shard_index = 3;
  bad.shard_count = 3;
  CHECK_THROWS_AS(kiln::precompile_specs(specs, bad, c), kiln::ArgumentError);
}

TEST_CASE("precompile: one failing spec does not stop the others") {
  auto specs = some_specs();
  kiln::KernelSpec broken = specs[0];
  broken.name = "broken";
  broken.expression = "kiln::elementwise<kiln::op::Nope>";
  specs.insert(specs.begin() + 1, broken);
  kiln::test::TempDir tmp;
  kiln::cache::KernelCache c(std::optional<std::string>(tmp.path()));
  kiln::PrecompileOptions o;
  o.archs = {"sm_90a"};
  const auto s = kiln::precompile_specs(specs, o, c);
  CHECK(s.failed == 1);
  CHECK(s.compiled == 4);
  REQUIRE(s.failures.size() == 1);
  CHECK(s.failures[0].name == "broken");
  CHECK(s.failures[0].error.find("NVRTC") != std::string::npos);
}

TEST_CASE("precompile: a kernel that cannot be saved is a failure, not a success kept in memory") {
  const auto specs = some_specs();
  kiln::PrecompileOptions o;
  o.archs = {"sm_80"};
  kiln::test::TempDir tmp;
  kiln::cache::DiskIo read_only = kiln::cache::DiskIo::posix();
  read_only.open = [](const char*, int, mode_t) {
    errno = EROFS;
    return -1;
  };
  kiln::cache::KernelCache ro(std::optional<std::string>(tmp.path()), read_only);
  const auto s = kiln::precompile_specs(specs, o, ro);
  CHECK(s.failed == int(specs.size()));
  CHECK(s.compiled == 0);
  REQUIRE(!s.failures.empty());
  CHECK(s.failures[0].error.find("not saved") != std::string::npos);
  kiln::test::write_file(tmp / "file", "x");
  kiln::cache::KernelCache not_dir(std::optional<std::string>(tmp / "file"));
  CHECK(kiln::precompile_specs(specs, o, not_dir).failed == int(specs.size()));
  kiln::cache::KernelCache memory(std::nullopt);  // no directory asked for: memory by choice
  CHECK(kiln::precompile_specs(specs, o, memory).compiled == int(specs.size()));
}

TEST_CASE("precompile: kernels a bundle holds count as cached and are not compiled again") {
  const auto specs = some_specs();
  kiln::PrecompileOptions o;
  o.archs = {"sm_80"};
  kiln::test::TempDir tmp;
  std::vector<kiln::cache::BundleItem> items;
  {
    kiln::cache::KernelCache c(std::optional<std::string>(tmp / "farm"));
    REQUIRE(kiln::precompile_specs(specs, o, c).compiled == int(specs.size()));
    for (auto& e : kiln::cache::DiskCache(tmp / "farm").list())
      items.push_back({*kiln::cache::CacheKey::parse(e.key), *e.kernel});
  }
  kiln::cache::write_bundle(tmp / "app.kbundle", items);
  kiln::cache::KernelCacheOptions co;
  co.dir = tmp / "fresh";
  co.bundles = {tmp / "app.kbundle"};
  kiln::cache::KernelCache c(co);
  const auto s = kiln::precompile_specs(specs, o, c);
  CHECK(s.cached == int(specs.size()));
  CHECK(s.compiled == 0);
  CHECK(kiln::cache::DiskCache(tmp / "fresh").scan().empty());
}
