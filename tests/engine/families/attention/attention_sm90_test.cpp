// The attention family's sm_90a path (attention_sm90.cuh): which calls take it, its launch (TMA
// maps of strided views, 384 threads), its tunables and tuning space, NVRTC compiles with
// nothing spilled; on the GPU, every tile width and stage count and the mma path a tuning
// record chooses, against the fp64 reference.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <kiln/graph.hpp>
#include <kiln/ops.hpp>
#include <map>

#include "cache/tuning.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/families/attention/attention.hpp"
#include "tests/engine/reference.hpp"
#include "tests/engine/families/attention/attention_calls.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Shape;
using kiln::test::desc;

namespace {

kiln::AttentionKernel hopper_call(DType t, Shape q, Shape kv) {
  return kiln::test::attention_call(t, std::move(q), std::move(kv), true);
}

}  // namespace

TEST_CASE("attention on sm_90a: which calls take the wgmma path, its launch and its maps") {
  kiln::AttentionKernel big = hopper_call(DType::bf16, {4, 16, 4096, 128}, {4, 16, 4096, 128});
  const kiln::KernelLaunch a = kiln::specialize_attention(big, "at", {});
  CHECK(a.spec.name == "at__wg128x128s2_d128");
  CHECK(a.spec.expression ==
        "kiln::attention::attention_sm90<kiln::bf16, int, 128, 128, 2, false, false, false>");
  CHECK(a.config.block[0] == 384);
  CHECK(a.config.grid[0] == 32 * 64);
  CHECK(a.config.persistent);  // blocks stride over the 2048 items
  CHECK(a.workspace == 0);  // full attention's blocks take every gridDim.x-th item
  // Causal items, which differ in length, drawn from two counters in the launch's workspace.
  kiln::AttentionKernel causal = big;
  causal.causal = true;
  const kiln::KernelLaunch ac = kiln::specialize_attention(causal, "at", {});
  CHECK(ac.config.persistent);
  CHECK(ac.workspace == 8);
  REQUIRE(ac.pointers.size() == a.pointers.size() + 1);
  CHECK(ac.pointers.back() == 0);  // the launch's own
  REQUIRE(ac.layout.pointers.size() == a.layout.pointers.size() + 1);
  CHECK(ac.layout.pointers.back().offset ==
        kiln::attention::config::pointer_offset(kiln::attention::config::kWorkspace));
  // Two Q tiles (the next item's Q loads under this one's), two stages of K and of V, the
  // barriers (Q landed and Q free for each Q tile, K and V landed and free for each stage), then
  // each Q tile's item and the two consumer groups' copies of it.
  CHECK(a.config.shared ==
        1024 + 2 * 128 * 256 + 2 * 2 * 128 * 256 + 8 * (2 * 2 + 4 * 2) + 3 * 4 * 2);
  // Where two do not fit beside the ring (D 192, 96 keys, 2 stages), one Q tile.
  namespace acfg = kiln::attention::config;
  CHECK(acfg::wgmma_q_tiles(192, 96, 2) == 1);
  CHECK(acfg::wgmma_shared_bytes(192, 96, 2) ==
        1024 + 128 * 384 + 2 * 2 * 96 * 384 + 8 * 10 + 3 * 4);
  CHECK(acfg::wgmma_q_tiles(128, 160, 2) == 2);
  CHECK(acfg::wgmma_shared_bytes(128, 160, 2) <= 227 * 1024);
  CHECK(a.tunables == kiln::Tunables{{"bn", 128}, {"stages", 2}, {"wgmma", 1}});
  REQUIRE(a.layout.params.size() == 4);  // Params, then the maps of q, k and v
  REQUIRE(a.layout.maps.size() == 3);
  for (std::uint32_t i = 0; i < 3; ++i) {
    CHECK(a.layout.maps[i].map.param == i + 1);
    CHECK(a.layout.maps[i].map.pointer == i + 1);
  }
  // Head sizes: D padded to 64 columns; past 128, narrower key tiles.
  CHECK(kiln::specialize_attention(hopper_call(DType::f16, {1, 2, 300, 64}, {1, 2, 300, 64}), "at",
                                   {})
            .spec.name == "at__wg128x128s3_d64");
  CHECK(kiln::specialize_attention(hopper_call(DType::f16, {1, 2, 300, 160}, {1, 2, 300, 160}),
                                   "at", {})
            .spec.name == "at__wg128x96s2_d160");
  // D above 192: the mma path (the sm_90a path's registers would spill).
  CHECK(kiln::specialize_attention(hopper_call(DType::f16, {1, 2, 300, 256}, {1, 2, 300, 256}),
                                   "at", {})
            .spec.name == "at__fa64x32s2_d256");
  // A [B, S, 3, H, D] projection read in place: q's map steps through its strides.
  kiln::AttentionKernel qkv = hopper_call(DType::bf16, {2, 4, 129, 64}, {2, 4, 129, 64});
  qkv.q = desc({2, 4, 129, 64}, DType::bf16);
  qkv.q.strides = {129 * 3 * 256, 64, 3 * 256, 1};
  qkv.k = qkv.v = qkv.q;
  const kiln::KernelLaunch p = kiln::specialize_attention(qkv, "at", {});
  CHECK(p.spec.name == "at__wg128x128s3_d64");
  const kiln::TensorMapDesc& m = p.layout.maps.at(0).map.desc;
  CHECK(m.rank == 5);
  CHECK(m.dims == std::array<std::uint64_t, 5>{64, 129, 4, 2, 1});
  CHECK(m.strides == std::array<std::uint64_t, 4>{768 * 2, 64 * 2, 129 * 768 * 2, 16});
  CHECK(m.box == std::array<std::uint32_t, 5>{64, 128, 1, 1, 1});
  CHECK(p.layout.maps.at(1).map.desc.box == std::array<std::uint32_t, 5>{64, 128, 1, 1, 1});
  // A mask, a decode step, f32, or a target without wgmma: another path.
  kiln::AttentionKernel masked = hopper_call(DType::bf16, {1, 2, 300, 64}, {1, 2, 300, 64});
  masked.mask = desc({300, 300}, DType::boolean);
  const kiln::KernelLaunch mk = kiln::specialize_attention(masked, "at", {});
  CHECK(mk.spec.name == "at__fa128x32s3_d64_boolmask");
  CHECK(mk.tunables.at("wgmma") == 0);
  CHECK(
      kiln::specialize_attention(hopper_call(DType::bf16, {1, 2, 3, 64}, {1, 2, 300, 64}), "at", {})
          .spec.name.find("__dec") != std::string::npos);
  // Three batch dims that do not merge, or k broadcast over the batch: no 5-d map, the mma path.
  kiln::AttentionKernel batches =
      hopper_call(DType::bf16, {2, 3, 2, 2, 300, 64}, {2, 3, 2, 2, 300, 64});
  batches.q.strides = {2 * 3 * 4 * 2 * 300 * 64, 4 * 2 * 300 * 64, 2 * 300 * 64, 300 * 64, 64, 1};
  batches.out = batches.q;
  CHECK(kiln::specialize_attention(batches, "at", {}).spec.name == "at__fa128x64s3r32_d64");
  kiln::AttentionKernel shared = hopper_call(DType::bf16, {4, 2, 300, 64}, {1, 2, 300, 64});
  shared.k.shape = shared.v.shape = {4, 2, 300, 64};
  shared.k.strides = shared.v.strides = {0, 300 * 64, 64, 1};
  CHECK(kiln::specialize_attention(shared, "at", {}).spec.name == "at__fa128x64s3r32_d64");
  // kv_lens take the path (the last V tile's rows past a batch's length zeroed in the kernel);
  // a scale that is not finite does not.
  kiln::AttentionKernel lens = hopper_call(DType::bf16, {2, 2, 300, 64}, {2, 2, 300, 64});
  lens.lens = desc({2}, DType::i64);
  CHECK(kiln::specialize_attention(lens, "at", {}).spec.name == "at__wg128x128s3_d64_lens");
  kiln::AttentionKernel inf = hopper_call(DType::bf16, {1, 2, 300, 64}, {1, 2, 300, 64});
  inf.scale = HUGE_VAL;
  CHECK(kiln::specialize_attention(inf, "at", {}).spec.name == "at__fa128x64s3r32_d64");
  kiln::AttentionKernel negative = hopper_call(DType::bf16, {1, 2, 300, 64}, {1, 2, 300, 64});
  negative.scale = -0.5;  // the sm_90a softmax takes the max of unscaled scores
  CHECK(kiln::specialize_attention(negative, "at", {}).spec.name == "at__fa128x64s3r32_d64");
  kiln::AttentionKernel sm80 = hopper_call(DType::bf16, {1, 2, 300, 64}, {1, 2, 300, 64});
  sm80.wgmma = false;
  CHECK(kiln::specialize_attention(sm80, "at", {}).spec.name == "at__fa128x64s3r32_d64");
  // Tunables: the mma path by wgmma=0; wgmma=1 where the call cannot take it is an error.
  const kiln::KernelLaunch mma = kiln::specialize_attention(
      hopper_call(DType::bf16, {1, 2, 300, 64}, {1, 2, 300, 64}), "at", {{"wgmma", 0}});
  CHECK(mma.spec.name == "at__fa128x64s3r32_d64");
  CHECK(mma.tunables.at("wgmma") == 0);
  CHECK(kiln::specialize_attention(hopper_call(DType::bf16, {1, 2, 300, 64}, {1, 2, 300, 64}), "at",
                                   {{"bn", 192}, {"stages", 4}})
            .spec.name == "at__wg128x192s4_d64");
  CHECK_THROWS_WITH_AS(kiln::specialize_attention(masked, "at", {{"wgmma", 1}}),
                       "at: wgmma=1: the call cannot take the sm_90a path: a mask operand takes "
                       "the mma path",
                       kiln::ArgumentError);
  CHECK_THROWS_AS(
      kiln::specialize_attention(hopper_call(DType::bf16, {1, 2, 300, 64}, {1, 2, 300, 64}), "at",
                                 {{"bn", 80}}),
      kiln::ArgumentError);
  CHECK_THROWS_AS(
      kiln::specialize_attention(hopper_call(DType::bf16, {1, 2, 300, 64}, {1, 2, 300, 64}), "at",
                                 {{"wm", 32}}),
      kiln::ArgumentError);
}

TEST_CASE(
    "the sm_90a attention tuning space: 8 candidates or more, the default first, each "
    "compiling with nothing spilled") {
  kiln::autotune::DeviceLimits lim;
  lim.max_shared_bytes_per_block = 227 * 1024;
  lim.max_threads_per_block = 1024;
  // With kv_lens (second): the consumers clear the last V tile's rows past a batch's length.
  const std::pair<std::int64_t, bool> calls[] = {
      {64, false}, {128, false}, {128, true}, {192, false}};
  for (const auto& call : calls) {
    const std::int64_t d = call.first;
    const bool lens = call.second;
    kiln::AttentionKernel k = hopper_call(DType::bf16, {2, 8, 1000, d}, {2, 2, 1000, d});
    k.causal = true;
    if (lens) k.lens = desc({2}, DType::i64);
    const kiln::KernelLaunch base = kiln::specialize_attention(k, "attention_bf16", {});
    const auto c = kiln::autotune::attention_space(base, 227 * 1024, true).candidates(lim);
    CAPTURE(d);
    CHECK(c.front() == base.tunables);
    CHECK(c.size() >= (d <= 128 ? 8u : 3u));
    for (const kiln::Tunables& t : c) {
      const kiln::KernelLaunch L = kiln::specialize_attention(k, "attention_bf16", t);
      const kiln::CompiledKernel ck = kiln::compiler::compile(L.spec, "sm_90a");
      CAPTURE(L.spec.name);
      CHECK(ck.spill_bytes == 0);
      CHECK(ck.log.find("serialized") == std::string::npos);
      if (ck.log.find("serialized") != std::string::npos) MESSAGE(ck.log);
    }
    MESSAGE(fmt::format("D {}{}: {} candidates compiled for sm_90a", d, lens ? " kv_lens" : "",
                        c.size()));
  }
}

TEST_CASE(
    "gpu: attention's sm_90a path at every tile width and stage count, and the mma path, "
    "as a tuning record sets them" *
    doctest::skip(!kiln::test::has_gpu() || !kiln::test::has_arch(9))) {
  struct Case {
    std::int64_t b, hq, hkv, sq, skv, d;
    bool causal, bottom_right;
    double scale = 0;  // 0: the default, 1 / sqrt(D)
  };
  // Lengths off the tiles, grouped heads, causal both ways (bottom-right with rows that see
  // no key), D 40 padded to 64 columns and 160 to 192.
  const std::vector<Case> cases = {{2, 4, 2, 300, 333, 64, true, false},
                                   {1, 4, 1, 129, 1000, 128, false, false},
                                   {1, 2, 2, 200, 77, 160, true, true},
                                   {2, 2, 2, 17, 250, 40, false, false, 0.3}};
  auto rng = kiln::test::make_rng(52);
  for (const Case& c : cases) {
    kiln::Graph g;
    const auto q = g.input("q", {c.b, c.hq, c.sq, c.d}, DType::bf16);
    const auto k = g.input("k", {c.b, c.hkv, c.skv, c.d}, DType::bf16);
    const auto v = g.input("v", {c.b, c.hkv, c.skv, c.d}, DType::bf16);
    Attrs attrs;
    attrs.set("causal", c.causal).set("causal_align", c.bottom_right ? "bottom_right" : "top_left");
    if (c.scale > 0) attrs.set("scale", c.scale);
    g.output(kiln::apply("attention", {q, k, v}, attrs), "o");
    const std::string signature = kiln::compiler::spec_id(kiln::plan_specs(g).at(0));
    std::vector<std::map<std::string, int>> records = {{{"wgmma", 0}}};
    for (int bn : {64, 96, 128, 160, 192}) {
      // The deepest ring of 2 or 3 stages whose shared memory a block has.
      int stages = 3;
      while (stages >= 2 &&
             kiln::attention::config::wgmma_shared_bytes(int(c.d), bn, stages) > 227 * 1024)
        --stages;
      if (kiln::wgmma_key_tile_fits(int(c.d), bn) && stages >= 2)
        records.push_back({{"wgmma", 1}, {"bn", bn}, {"stages", stages}});
    }
    for (const auto& r : records) {
      std::string tunables;
      for (const auto& [n, x] : r) tunables += fmt::format(" {}={}", n, x);
      CAPTURE(
          fmt::format("B{} H{}/{} Sq{} Skv{} D{}{}", c.b, c.hq, c.hkv, c.sq, c.skv, c.d, tunables));
      kiln::test::TempDir dir;
      kiln::Engine e(kiln::test::with_tuning_record(dir, signature, r));
      for (const auto& f : kiln::test::check_on_gpu(e, g, rng)) FAIL_CHECK(f);
      REQUIRE(e.kernels().size() == 1);
      const std::string want =
          r.at("wgmma") ? fmt::format("__wg128x{}s{}_", r.at("bn"), r.at("stages")) : "__fa";
      CHECK(e.kernels()[0].name.find(want) != std::string::npos);
    }
  }
}
