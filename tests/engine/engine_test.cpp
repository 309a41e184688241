// The Engine without a GPU: offline compilation into the disk cache, and clear errors.
#include <cstdlib>

#include "cache/disk_cache.hpp"
#include "tests/support.hpp"

using kiln::test::desc;

namespace {

kiln::EngineOptions offline(const std::string& dir) { return kiln::test::offline("sm_90a", dir); }

}  // namespace

TEST_CASE("an offline engine compiles into the disk cache; a second engine compiles nothing") {
  kiln::test::TempDir tmp;
  const auto x = desc({1 << 20}, kiln::DType::bf16);
  {
    kiln::Engine e(offline(tmp.path()));
    CHECK_FALSE(e.has_device());
    const auto r = kiln::precompile(e, "silu", {x});
    CHECK(r.source == "compiled");
    CHECK(r.name == "silu_bf16__r1v8");
    CHECK(r.compile_ms > 0);
    CHECK(kiln::precompile(e, "silu", {x}).source == "memory");
    CHECK(e.counters().compiles == 1);
    CHECK(e.counters().memory_hits == 1);
  }
  kiln::Engine again(offline(tmp.path()));
  CHECK(kiln::precompile(again, "silu", {x}).source == "disk");
  CHECK(again.counters().compiles == 0);
  CHECK(again.counters().disk_hits == 1);
  const auto entries = kiln::cache::DiskCache(tmp.path()).list();
  REQUIRE(entries.size() == 1);
  REQUIRE(entries[0].kernel);
  CHECK(entries[0].kernel->name == "silu_bf16__r1v8");
  CHECK(entries[0].kernel->arch == "sm_90a");
}

TEST_CASE("the arch is part of the key: sm_80 and sm_90a get separate entries") {
  kiln::test::TempDir tmp;
  const auto x = desc({4096}, kiln::DType::f32);
  kiln::Engine a(offline(tmp.path()));
  auto o = offline(tmp.path());
  o.arch = "sm_80";
  kiln::Engine b(o);
  CHECK(kiln::precompile(a, "exp", {x}).key != kiln::precompile(b, "exp", {x}).key);
  CHECK(kiln::cache::DiskCache(tmp.path()).list().size() == 2);
}

TEST_CASE("KILN_DISABLE_DISK_CACHE=1 keeps kernels in memory") {
  kiln::test::TempDir tmp;
  ::setenv("KILN_DISABLE_DISK_CACHE", "1", 1);
  kiln::Engine e(offline(tmp.path()));
  ::unsetenv("KILN_DISABLE_DISK_CACHE");
  kiln::precompile(e, "neg", {desc({64}, kiln::DType::f32)});
  CHECK(kiln::cache::DiskCache(tmp.path()).list().empty());
  CHECK(e.cache_dir().find("memory only") != std::string::npos);
}

TEST_CASE("an offline engine refuses to launch, with a reason") {
  kiln::test::TempDir tmp;
  kiln::Engine e(offline(tmp.path()));
  CHECK_THROWS_WITH_AS(e.empty({4}, kiln::DType::f32), doctest::Contains("offline"), kiln::CudaError);
  kiln::TensorView v = desc({4}, kiln::DType::f32);
  v.data = 0x1000;
  CHECK_THROWS_WITH_AS(kiln::call_into(e, "neg", v, {v}), doctest::Contains("offline"), kiln::CudaError);
}

TEST_CASE("bad engine options are typed errors") {
  kiln::EngineOptions o;
  o.offline = true;
  CHECK_THROWS_WITH_AS(kiln::Engine{o}, doctest::Contains("needs EngineOptions::arch"), kiln::ArgumentError);
  o.arch = "sm_9000x";
  CHECK_THROWS_AS(kiln::Engine{o}, kiln::ArgumentError);
}

TEST_CASE("without a driver, an online engine says how to compile offline" * doctest::skip(kiln::test::has_gpu())) {
  CHECK_THROWS_WITH_AS(kiln::Engine{}, doctest::Contains("EngineOptions::offline"), kiln::CudaError);
}

TEST_CASE("bad operands never reach NVRTC or the cache") {
  kiln::test::TempDir tmp;
  kiln::Engine e(offline(tmp.path()));
  kiln::TensorView misaligned = desc({16}, kiln::DType::f32);
  misaligned.data = 0x1002;
  CHECK_THROWS_WITH_AS(kiln::precompile(e, "neg", {misaligned}), doctest::Contains("not aligned"), kiln::ArgumentError);
  kiln::TensorView bad_strides = desc({4, 4}, kiln::DType::f32);
  bad_strides.strides = {1};
  CHECK_THROWS_AS(kiln::precompile(e, "neg", {bad_strides}), kiln::ShapeError);
  CHECK_THROWS_AS(kiln::precompile(e, "neg", {desc({0, 3}, kiln::DType::f32)}), kiln::ShapeError);
  CHECK_THROWS_AS(kiln::precompile(e, "nope", {desc({3}, kiln::DType::f32)}), kiln::ArgumentError);
  CHECK(e.counters().compiles == 0);
  CHECK(kiln::cache::DiskCache(tmp.path()).list().empty());
}
