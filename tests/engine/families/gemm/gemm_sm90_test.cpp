// The GEMM family's sm_90a path without a GPU: persistent blocks and their launch, programmatic
// launches, the tuning space of an exact f32 product, the default tiles of f16 products, and
// which outputs the epilogue stores by TMA.
#include <doctest/doctest.h>

#include <kiln/ops.hpp>

#include "engine/compiler/compiler.hpp"
#include "engine/exec/engine_impl.hpp"
#include "engine/families/gemm/gemm.hpp"
#include "engine/families/gemm/gemm_problem.hpp"
#include "engine/families/rows/rows.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::test::desc;

namespace {

// An sm_90a matmul of an m x k by a k x n of `t` into an m x n, no epilogue; `b_along_k`: B a
// view of an [N, K] weight (contiguous along K), as linear reads it.
kiln::GemmKernel matmul(std::int64_t m, std::int64_t k, std::int64_t n, DType t, bool b_along_k) {
  kiln::GemmKernel g;
  g.arch = "sm_90a";
  g.op = &kiln::ops::find_op("matmul");
  g.a = desc({m, k}, t);
  g.b = desc({k, n}, t);
  if (b_along_k) g.b.strides = {1, k};
  g.outputs = {desc({m, n}, t)};
  g.epilogue = kiln::identity_epilogue(t);
  return g;
}

}  // namespace

TEST_CASE(
    "the wgmma path's blocks are persistent unless K is split; a launch clamps them; GEMM launches "
    "are programmatic outside clusters") {
  kiln::GemmKernel k = matmul(8192, 1024, 3072, DType::bf16, true);
  const kiln::KernelLaunch L = kiln::specialize_gemm(k, "matmul_bf16");
  REQUIRE(L.tunables.at("wgmma") == 1);
  CHECK(L.tunables.at("split") == 1);
  CHECK(L.config.persistent);
  CHECK(L.config.grid[0] == 64u * 12);  // every tile of 128 x 256; the launch takes fewer
  kiln::detail::LoadedKernel loaded;
  loaded.max_dynamic_shared = 227 * 1024;
  loaded.sm_count = 132;
  CHECK(loaded.config_for(L).grid[0] == 132);
  loaded.sm_count = 0;  // offline: nothing to clamp to
  CHECK(loaded.config_for(L).grid[0] == 64u * 12);
  // A split of K: a block per tile and range of K, summed in its cluster.
  kiln::GemmTunables split;
  split.split = 4;
  const kiln::KernelLaunch S = kiln::specialize_gemm(k, "matmul_bf16", split);
  CHECK_FALSE(S.config.persistent);
  loaded.sm_count = 132;
  CHECK(loaded.config_for(S).grid[0] == 64u * 12);
  // Every GEMM kernel waits for the kernel before it, so it may launch early (sm_90 and later),
  // unless it runs in clusters.
  CHECK(L.config.programmatic);
  CHECK_FALSE(S.config.programmatic);
  k.a = desc({4, 1024}, DType::bf16);  // the few-row path
  k.outputs = {desc({4, 3072}, DType::bf16)};
  const kiln::KernelLaunch few = kiln::specialize_gemm(k, "matmul_bf16");
  CHECK(few.spec.name.find("__rows") != std::string::npos);
  CHECK(few.config.programmatic == !few.config.clustered());
  k.arch = "sm_80";
  CHECK_FALSE(kiln::specialize_gemm(k, "matmul_bf16").config.programmatic);
}

TEST_CASE("the wgmma path's tuning space of an exact f32 product offers only what fits") {
  // Its stages hold B's rest beside B: bn 256, and 5 or more stages at bn 128 with a split's
  // tile or without, would not fit in 227 KiB (bn 64 fits 6); the space knows that from the
  // default's needs.
  kiln::GemmKernel k;
  k.arch = "sm_90a";
  k.op = &kiln::ops::find_op("linear");
  k.a = desc({4096, 1024}, DType::f32);
  k.b = desc({1024, 1024}, DType::f32);  // linear's weight [N, K]: contiguous along K
  k.outputs = {desc({4096, 1024}, DType::f32)};
  k.epilogue = kiln::identity_epilogue(DType::f32);
  kiln::autotune::DeviceLimits limits;
  limits.max_shared_bytes_per_block = 227 * 1024;
  for (bool tf32 : {false, true}) {
    CAPTURE(tf32);
    k.tf32 = tf32;
    const kiln::KernelLaunch base = kiln::specialize_gemm(k, "linear_f32");
    REQUIRE(base.tunables.at("wgmma") == 1);
    const auto candidates = kiln::autotune::gemm_space(base).candidates(limits);
    int bn256 = 0;
    for (const auto& c : candidates) {
      CAPTURE(kiln::autotune::describe(c));
      CHECK_NOTHROW(kiln::specialize_gemm(k, "linear_f32", kiln::gemm_tunables(c, "linear_f32")));
      bn256 += c.at("bn") == 256;
      if (!tf32 && c.at("bn") == 128) CHECK(c.at("stages") <= 4);
    }
    // Exact: bn 64 at 3 to 6 stages and bn 128 at 3 or 4, each split: 24. TF32: three widths,
    // what fits: more.
    if (!tf32) CHECK(candidates.size() == 24u);
    CHECK((bn256 > 0) == tf32);
  }
}

TEST_CASE("the wgmma path's default tile and split on f16 products are those measured fastest") {
  // The tiles measured fastest beside cuBLAS (bench/gemm_medium.py, bench/NOTES.md): a product of
  // few tiles takes a narrower tile or splits K so that it fills the SMs, a large one keeps
  // 128 x 256. wgmma_fit_tunables, the convolutions' estimate too, must keep choosing them.
  struct Row {
    std::int64_t m, k, n;
    bool b_along_k;
    const char* tile;
  };
  const std::vector<Row> rows = {
      {1024, 4096, 256, true, "__wg128x96s4k4_kk"},
      {2048, 1280, 640, true, "__wg128x160s4k2_kk"},
      {2048, 1280, 640, false, "__wg128x192s4k2_kt"},  // B along N: widths of 64s only
      {256, 4096, 4096, false, "__wg128x128s4k2_kt"},
      {4096, 320, 320, true, "__wg128x80s4_kk"},
      {4096, 4096, 4096, true, "__wg128x256s4_kk"},
      {8192, 1024, 3072, true, "__wg128x256s4_kk"},
  };
  for (const Row& r : rows) {
    const kiln::GemmKernel k = matmul(r.m, r.k, r.n, DType::f16, r.b_along_k);
    const std::string name = kiln::specialize_gemm(k, "matmul_f16").spec.name;
    CAPTURE(name);
    CHECK(name.find(r.tile) != std::string::npos);
  }
}

TEST_CASE("the wgmma path stores a plain output by TMA; a bias, a split or an unaligned output "
          "takes the staged walk") {
  // The store's map is a third one, of pointer 0 (the output) in parameter 3, which the launch
  // encodes instead of writing the pointer; every wgmma kernel has the parameter.
  kiln::GemmKernel k = matmul(4096, 1024, 1024, DType::f16, true);
  const auto stores = [&k](kiln::GemmTunables t) {
    const kiln::KernelLaunch L = kiln::specialize_gemm(k, "matmul_f16", t);
    const std::string& e = L.spec.expression;
    const bool store = L.layout.maps.size() == 3;  // the template's Store, then Columns
    CAPTURE(e);
    CHECK(L.layout.params.size() == 4u);
    const std::string flags = e.substr(e.rfind(", ", e.rfind(", ") - 1) + 2);  // Store, Columns
    CHECK(flags.rfind(store ? "true, " : "false, ", 0) == 0);
    if (store) CHECK((L.layout.maps[2].map.pointer == 0 && L.layout.maps[2].map.param == 3));
    return store;
  };
  CHECK(stores({}));
  const kiln::CompiledKernel c =
      kiln::compiler::compile(kiln::specialize_gemm(k, "matmul_f16").spec, "sm_90a");
  CHECK(c.spill_bytes == 0);
  kiln::GemmTunables split;
  split.split = 2;
  CHECK_FALSE(stores(split));
  k.bias = desc({1024}, DType::f16);
  CHECK_FALSE(stores({}));
  // Its walk reads the bias from shared memory, staged once a tile (Columns): a row of BN floats.
  const kiln::KernelLaunch biased = kiln::specialize_gemm(k, "matmul_f16");
  const std::string& e = biased.spec.expression;
  CHECK(e.substr(e.size() - 12) == "false, true>");
  CHECK(kiln::compiler::compile(biased.spec, "sm_90a").spill_bytes == 0);
  k.bias.reset();
  k.outputs[0].strides = {1028, 1};  // rows 2056 bytes apart: not a multiple of 16
  CHECK_FALSE(stores({}));
}
