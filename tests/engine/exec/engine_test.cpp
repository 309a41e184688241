// The Engine without a GPU: offline compilation into the disk cache, and clear errors.
#include <cstdlib>
#include <kiln/graph.hpp>

#include "cache/disk_cache.hpp"
#include "engine/exec/engine_impl.hpp"
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
  CHECK_THROWS_WITH_AS(e.empty({4}, kiln::DType::f32), doctest::Contains("offline"),
                       kiln::CudaError);
  kiln::TensorView v = desc({4}, kiln::DType::f32);
  v.data = 0x1000;
  CHECK_THROWS_WITH_AS(kiln::call_into(e, "neg", v, {v}), doctest::Contains("offline"),
                       kiln::CudaError);
}

TEST_CASE("bad engine options are typed errors") {
  kiln::EngineOptions o;
  o.offline = true;
  CHECK_THROWS_WITH_AS(kiln::Engine{o}, doctest::Contains("needs EngineOptions::arch"),
                       kiln::ArgumentError);
  o.arch = "sm_9000x";
  CHECK_THROWS_AS(kiln::Engine{o}, kiln::ArgumentError);
}

TEST_CASE("without a driver, an online engine says how to compile offline" *
          doctest::skip(kiln::test::has_gpu())) {
  CHECK_THROWS_WITH_AS(kiln::Engine{}, doctest::Contains("EngineOptions::offline"),
                       kiln::CudaError);
}

TEST_CASE("bad operands never reach NVRTC or the cache") {
  kiln::test::TempDir tmp;
  kiln::Engine e(offline(tmp.path()));
  kiln::TensorView misaligned = desc({16}, kiln::DType::f32);
  misaligned.data = 0x1002;
  CHECK_THROWS_WITH_AS(kiln::precompile(e, "neg", {misaligned}), doctest::Contains("not aligned"),
                       kiln::ArgumentError);
  kiln::TensorView bad_strides = desc({4, 4}, kiln::DType::f32);
  bad_strides.strides = {1};
  CHECK_THROWS_AS(kiln::precompile(e, "neg", {bad_strides}), kiln::ShapeError);
  CHECK_THROWS_AS(kiln::precompile(e, "neg", {desc({0, 3}, kiln::DType::f32)}), kiln::ShapeError);
  CHECK_THROWS_AS(kiln::precompile(e, "nope", {desc({3}, kiln::DType::f32)}), kiln::ArgumentError);
  CHECK(e.counters().compiles == 0);
  CHECK(kiln::cache::DiskCache(tmp.path()).list().empty());
}

TEST_CASE("a plan's kernels compile side by side: each once, in plan order, errors typed") {
  kiln::test::TempDir tmp;
  kiln::Graph g;  // four kernels unfused, one of them twice (the same add)
  auto a = g.input("a", {1000}, kiln::DType::f32);
  auto b = g.input("b", {1000}, kiln::DType::bf16);
  g.output(kiln::silu(a), "s");
  g.output(kiln::exp(b), "e");
  g.output(a + a, "p");
  g.output(a + a, "q");
  g.output(b * 2.0, "m");
  for (const char* threads : {"1", "3"}) {
    CAPTURE(threads);
    ::setenv("KILN_COMPILE_THREADS", threads, 1);
    kiln::Engine e(offline(tmp.path() + "/" + threads));
    const kiln::Plan plan(g, false);
    const std::vector<kiln::KernelRecord> first = plan.compile(e);
    REQUIRE(first.size() == 5);
    std::vector<std::string> names, sources;
    for (const auto& r : first) names.push_back(r.name), sources.push_back(r.source);
    CHECK(names == std::vector<std::string>{"silu_f32__r1v4", "exp_bf16__r1v8", "add_f32__r1v4",
                                            "add_f32__r1v4", "mul_bf16__r1v8"});
    CHECK(sources ==
          std::vector<std::string>{"compiled", "compiled", "compiled", "memory", "compiled"});
    CHECK(e.counters().compiles == 4);
    for (const auto& r : plan.compile(e)) CHECK(r.source == "memory");
    CHECK(e.counters().compiles == 4);
  }
  ::unsetenv("KILN_COMPILE_THREADS");

  // A spec that does not compile fails the call with its CompileError; the good ones around it
  // are loaded all the same, and nothing of the bad one is cached.
  kiln::Engine e(offline(tmp.path() + "/bad"));
  const kiln::KernelSpec good1{
      "good1", "extern \"C\" __global__ void k(float* p) { p[0] = 1; }\n", "k", {"-std=c++17"}};
  const kiln::KernelSpec bad{
      "bad", "extern \"C\" __global__ void k(float* p) { p[0] = nope; }\n", "k", {"-std=c++17"}};
  const kiln::KernelSpec good2{
      "good2", "extern \"C\" __global__ void k(float* p) { p[0] = 2; }\n", "k", {"-std=c++17"}};
  CHECK_THROWS_WITH_AS(kiln::detail::impl_of(e).prepare_all({&good1, &bad, &good2}),
                       doctest::Contains("kernel bad"), kiln::CompileError);
  std::string source;
  kiln::detail::impl_of(e).prepare(good1, &source);
  CHECK(source == "memory");
  kiln::detail::impl_of(e).prepare(good2, &source);
  CHECK(source == "memory");
  CHECK(e.counters().compiles == 2);
}

TEST_CASE("KILN_COMPILE_THREADS must be a whole number from 1 to 256") {
  for (const char* v : {"0", "-1", "abc", "2x", "257", "99999999999999999999"}) {
    CAPTURE(v);
    ::setenv("KILN_COMPILE_THREADS", v, 1);
    CHECK_THROWS_WITH_AS(kiln::Engine(offline("")), doctest::Contains("KILN_COMPILE_THREADS"),
                         kiln::ArgumentError);
  }
  ::unsetenv("KILN_COMPILE_THREADS");
}
