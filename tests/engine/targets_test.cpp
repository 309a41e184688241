// Targets (engine/target.hpp) and GEMM buckets (engine/families/gemm/gemm_buckets.hpp), without a
// GPU: what a dynamic-batch product precompiles, what an sm_86 engine specializes, and which
// cubins of an older arch it takes.
#include <kiln/graph.hpp>
#include <set>

#include "engine/compiler/compiler.hpp"
#include "engine/exec/engine_impl.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/families/gemm/gemm.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/exec/plan_impl.hpp"
#include "engine/target.hpp"
#include "tests/support.hpp"

using kiln::DType;

namespace {

// gelu(linear(x, w, b)) over x of `shape` (a dim -1 is dynamic), w [n, k].
kiln::Graph mlp(kiln::Shape shape, std::int64_t n, DType t = DType::bf16) {
  kiln::Graph g;
  const std::int64_t k = shape.back();
  auto x = g.input("x", shape, t);
  auto w = g.input("w", {n, k}, t);
  auto b = g.input("b", {n}, t);
  g.output(kiln::gelu(kiln::linear(x, w, b)), "y");
  return g;
}

std::set<std::string> ids(const std::vector<kiln::KernelSpec>& specs) {
  std::set<std::string> out;
  for (const auto& s : specs) out.insert(kiln::compiler::spec_id(s));
  return out;
}

// The kernels of `g`'s single group as `target` specializes it (static shapes).
kiln::KernelLaunch only_launch(const kiln::Graph& g, const kiln::Target& target) {
  const kiln::detail::PlanImpl p(g, true);
  std::vector<kiln::TensorView> values;
  for (const auto& n : g.nodes()) values.push_back(kiln::detail::PlanImpl::desc(n));
  REQUIRE(p.groups.size() == 1);
  return p.specialize(p.groups[0], values, g, target);
}

}  // namespace

TEST_CASE("a dynamic-batch linear precompiles its M buckets, which hold every batch's kernel") {
  for (const kiln::Shape& shape :
       {kiln::Shape{-1, 768}, kiln::Shape{-1, 4, 768}, kiln::Shape{-1, 128, 768}})
    for (const char* arch : {"sm_80", "sm_90a"}) {
      CAPTURE(kiln::to_string(shape));
      CAPTURE(arch);
      const kiln::Graph g = mlp(shape, 3072);
      std::vector<kiln::KernelSpec> specs;
      REQUIRE_NOTHROW(specs = kiln::plan_specs(g, true, {}, nullptr, arch));
      CHECK(specs.size() <= 12);  // a small, bounded set
      const std::set<std::string> listed = ids(specs);
      for (std::int64_t batch : {1, 2, 7, 300, 4096, 32768, 200000}) {
        CAPTURE(batch);
        for (const auto& s : kiln::run_specs(g, batch, true, arch))
          CHECK_MESSAGE(listed.count(kiln::compiler::spec_id(s)), s.name);
      }
      CHECK(kiln::Plan(g).kernels(arch).at(0).name == "linear__gelu_bf16__buckets");
    }
}

TEST_CASE("a bucket's kernel at a power of two is the static shape's kernel") {
  const kiln::Graph dynamic = mlp({-1, 768}, 3072);
  for (const char* arch : {"sm_80", "sm_90a"})
    for (std::int64_t m : {16, 4096, 32768}) {
      CAPTURE(arch);
      CAPTURE(m);
      const auto bucket = kiln::run_specs(dynamic, m, true, arch);
      const auto exact = kiln::plan_specs(mlp({m, 768}, 3072), true, {}, nullptr, arch);
      REQUIRE(bucket.size() == 1);
      REQUIRE(exact.size() == 1);
      CHECK(bucket[0].name == exact[0].name);
      CHECK(kiln::compiler::spec_id(bucket[0]) == kiln::compiler::spec_id(exact[0]));
    }
}

TEST_CASE("targets: limits by arch, and which archs' cubins run where") {
  CHECK(kiln::target_of("sm_86").max_shared == 99 * 1024);
  CHECK(kiln::target_of("sm_89").max_shared == 99 * 1024);
  CHECK(kiln::target_of("sm_80").max_shared == 163 * 1024);
  CHECK(kiln::target_of("sm_90a").max_shared == 227 * 1024);
  CHECK(kiln::target_of("sm_90a").sms == 132);
  CHECK_THROWS_AS(kiln::target_of("garbage"), kiln::ArgumentError);
  CHECK(kiln::runs_on("sm_80", "sm_86"));
  CHECK(kiln::runs_on("sm_86", "sm_89"));
  CHECK_FALSE(kiln::runs_on("sm_86", "sm_80"));
  CHECK_FALSE(kiln::runs_on("sm_80", "sm_90a"));  // never across majors
  CHECK(kiln::runs_on("sm_90", "sm_90a"));
  CHECK_FALSE(kiln::runs_on("sm_90a", "sm_90"));  // an arch-specific cubin only on its arch
  CHECK(kiln::older_compatible_archs("sm_89") ==
        std::vector<std::string>{"sm_87", "sm_86", "sm_80"});
  CHECK(kiln::older_compatible_archs("sm_80").empty());
}

TEST_CASE("sm_86: GEMM and row kernels specialize within 99 KB and fill its SMs") {
  const kiln::Target sm86 = kiln::target_of("sm_86");
  kiln::autotune::DeviceLimits limits;
  limits.max_shared_bytes_per_block = sm86.max_shared;
  for (DType t : {DType::f32, DType::bf16})
    for (std::int64_t m : {1, 8, 100, 896, 4096})
      for (std::int64_t n : {64, 896, 3072}) {
        CAPTURE(m);
        CAPTURE(n);
        const kiln::Graph g = mlp({m, 1024}, n, t);
        const kiln::KernelLaunch base = only_launch(g, sm86);
        CHECK(base.config.shared <= unsigned(sm86.max_shared));
        const kiln::autotune::Space space = base.family->space(
            kiln::detail::PlanImpl(g, true).groups[0], base, sm86);
        for (const auto& c : space.candidates(limits)) {
          const kiln::detail::PlanImpl p(g, true);
          std::vector<kiln::TensorView> values;
          for (const auto& node : g.nodes()) values.push_back(kiln::detail::PlanImpl::desc(node));
          CHECK(p.specialize(p.groups[0], values, g, sm86, c).config.shared <=
                unsigned(sm86.max_shared));
        }
      }
  for (std::int64_t length : {1000, 4096, 40000, 200000}) {
    kiln::Graph g;
    g.output(kiln::softmax(g.input("x", {64, length}, DType::f32)));
    CHECK(only_launch(g, sm86).config.shared <= unsigned(sm86.max_shared));
  }
  // 49 tiles of 128 x 128: two waves' worth of 64 x 64 tiles fill 108 SMs (sm_80) but not 84.
  const kiln::Graph g = mlp({896, 1024}, 896);
  CHECK(only_launch(g, sm86).tunables.at("bm") == 128);
  CHECK(only_launch(g, kiln::target_of("sm_80")).tunables.at("bm") == 64);
  // A tile whose ring needs 160 KB runs on sm_80, never on sm_86.
  kiln::GemmKernel k;
  k.a = kiln::test::desc({896, 1024}, DType::bf16);
  k.b = kiln::test::desc({1024, 896}, DType::bf16);
  k.outputs = {kiln::test::desc({896, 896}, DType::bf16)};
  k.op = &kiln::ops::find_op("matmul");
  kiln::GemmTunables big;
  big.bm = big.bn = 128, big.stages = 5;
  k.arch = "sm_80";
  CHECK_NOTHROW(kiln::specialize_gemm(k, "matmul_bf16", big));
  k.arch = "sm_86";
  CHECK_THROWS_WITH_AS(kiln::specialize_gemm(k, "matmul_bf16", big),
                       doctest::Contains("the device allows 101376"), kiln::ArgumentError);
}

TEST_CASE("an sm_86 engine takes an sm_80 cache's kernels where the specializations agree") {
  kiln::test::TempDir tmp;
  kiln::Graph g;  // a softmax the same for both; a product whose tile each target picks its own
  g.output(kiln::softmax(g.input("x", {64, 1000}, DType::f32)), "s");
  auto a = g.input("a", {896, 1024}, DType::bf16);
  g.output(kiln::matmul(a, g.input("b", {1024, 896}, DType::bf16)), "p");
  const kiln::Plan plan(g);
  {
    kiln::Engine sm80(kiln::test::offline("sm_80", tmp.path()));
    CHECK(sm80.counters().compiles == 0);
    plan.compile(sm80);
    CHECK(sm80.counters().compiles == 2);
  }
  kiln::Engine sm86(kiln::test::offline("sm_86", tmp.path()));
  const auto records = plan.compile(sm86);
  REQUIRE(records.size() == 2);
  CHECK(records[0].source == "disk");      // the sm_80 cubin of the softmax
  CHECK(records[1].source == "compiled");  // the product's sm_86 tile is its own
  CHECK(sm86.counters().compiles == 1);
  // `kiln cache explain` says the same.
  g.save(tmp / "g.json");
  const auto explain =
      kiln::test::kiln_cli("cache explain " + (tmp / "g.json") + " --arch sm_86 --cache-dir " +
                           tmp.path());
  CHECK(explain.status == 0);
  CHECK(explain.output.find("hit (disk, the sm_80 cubin, which runs on sm_86)") !=
        std::string::npos);
}

TEST_CASE("a kernel that needs more shared memory than a device grants is never launched there") {
  // The sm_90a tile of a 4096-row product rings 196 KB; a device of 99 KB (sm_86) refuses it,
  // where a row's stash, which uses what it gets, is cut to what the device grants.
  const kiln::KernelLaunch gemm = only_launch(mlp({4096, 768}, 3072), kiln::target_of("sm_90a"));
  REQUIRE(gemm.config.shared > 99u * 1024);
  kiln::detail::LoadedKernel small;
  small.max_dynamic_shared = 99 * 1024;
  small.sm_count = 84;
  CHECK_THROWS_WITH_AS(small.config_for(gemm), doctest::Contains("this device grants 101376"),
                       kiln::ArgumentError);
  kiln::Graph g;
  g.output(kiln::softmax(g.input("x", {64, 200000}, DType::f32)));
  const kiln::KernelLaunch rows = only_launch(g, kiln::target_of("sm_90a"));
  REQUIRE(rows.config.shared > 99u * 1024);
  CHECK(small.config_for(rows).shared == 99u * 1024);
}
