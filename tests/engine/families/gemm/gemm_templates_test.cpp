// The GEMM templates' descriptors without a GPU: every tunable comes from one table
// (gemm_tunable_table()), so the parse of a Tunables map, the tunables a launch records and the
// tuning space agree on every path; the shared memory a launch asks for is gemm_config.cuh's.
#include "engine/families/gemm/gemm_templates.hpp"

#include <doctest/doctest.h>

#include <kiln/ops.hpp>
#include <set>

#include "engine/families/gemm/gemm.hpp"
#include "engine/families/rows/rows.hpp"
#include "engine/target.hpp"
#include "kernel_templates/kiln/gemm_config.cuh"
#include "tests/support.hpp"

using kiln::DType;
using kiln::test::desc;

namespace {

// A product of `m` x 512 x 512 in `dtype` for `arch`.
kiln::GemmKernel product(std::int64_t m, DType dtype, const char* arch) {
  kiln::GemmKernel k;
  k.arch = arch;
  k.op = &kiln::ops::find_op("matmul");
  k.a = desc({m, 512}, dtype);
  k.b = desc({512, 512}, dtype);
  k.outputs = {desc({m, 512}, dtype)};
  k.epilogue = kiln::identity_epilogue(dtype);
  return k;
}

// The names of the table's rows of path `where`, in order.
std::vector<std::string> table_names(unsigned where) {
  std::vector<std::string> names;
  for (const auto& row : kiln::gemm_tunable_table())
    if (row.in(where)) names.emplace_back(row.name);
  return names;
}

// What every path must show: its space's tunables are the table's rows of the path, the
// launch records exactly those names, and every candidate the space offers parses into a launch
// that records it back.
void check_path(const kiln::GemmKernel& k, unsigned where, const char* stem) {
  const kiln::KernelLaunch base = kiln::specialize_gemm(k, stem);
  const kiln::autotune::Space space = kiln::autotune::gemm_space(base);
  const std::vector<std::string> names = table_names(where);
  REQUIRE(!names.empty());
  std::vector<std::string> space_names, launch_names;
  for (const auto& t : space.tunables) space_names.push_back(t.name);
  for (const auto& [name, value] : base.tunables) launch_names.push_back(name);
  CHECK(space_names == names);
  CHECK(std::set<std::string>(launch_names.begin(), launch_names.end()) ==
        std::set<std::string>(names.begin(), names.end()));
  kiln::autotune::DeviceLimits limits;  // the target's, as the specialization checks them
  limits.max_shared_bytes_per_block = kiln::target_of(k.arch).max_shared;
  const auto candidates = space.candidates(limits);
  REQUIRE(!candidates.empty());
  CHECK(candidates.front() == base.tunables);  // the default is in the space, first
  for (const auto& c : candidates) {
    CAPTURE(kiln::autotune::describe(c));
    const kiln::KernelLaunch L = kiln::specialize_gemm(k, stem, kiln::gemm_tunables(c, stem));
    CHECK(L.tunables == c);
  }
}

}  // namespace

TEST_CASE(
    "the wgmma path's tunables: its space, its launches' tunables and the parse are the "
    "table's rows") {
  // Adding a tunable to the wgmma path is one row of gemm_tunable_table() (and its use in
  // GemmWgmmaTemplate): this case then covers it with no edit.
  const unsigned where = kiln::kGemmWgmma | kiln::kGemmClusters;
  for (const auto& row : kiln::gemm_tunable_table()) {
    if (!row.in(where)) continue;
    CAPTURE(std::string(row.name));
    for (int v : row.values) {  // each value parses into the row's field
      const kiln::GemmTunables t = kiln::gemm_tunables({{std::string(row.name), v}}, "x");
      CHECK(t.*(row.field) == v);
    }
  }
  const kiln::GemmKernel k = product(512, DType::bf16, "sm_90a");
  REQUIRE(kiln::specialize_gemm(k, "matmul_bf16").tunables.at("wgmma") == 1);
  check_path(k, where, "matmul_bf16");
}

TEST_CASE("the mma.sync and few-row paths' tunables are the table's rows too") {
  SUBCASE("mma.sync, no clusters") {
    check_path(product(512, DType::f16, "sm_80"), kiln::kGemmMma, "matmul_f16");
  }
  SUBCASE("few rows, clusters") {
    const kiln::GemmKernel k = product(4, DType::f32, "sm_90a");
    REQUIRE(kiln::specialize_gemm(k, "matmul_f32").tunables.at("skinny") == 1);
    check_path(k, kiln::kGemmSkinny | kiln::kGemmClusters, "matmul_f32");
  }
}

TEST_CASE("an unknown GEMM tunable: the message lists the table's names") {
  CHECK_THROWS_WITH_AS(kiln::gemm_tunables({{"tile", 64}}, "matmul_f32"),
                       "matmul_f32: 'tile' is not a tunable of the GEMM template (bm, bn, "
                       "warps_m, warps_n, stages, wgmma, split, skinny, columns)",
                       kiln::ArgumentError);
}

TEST_CASE("a GEMM launch's shared memory is gemm_config.cuh's layout") {
  namespace config = kiln::gemm::config;
  // The mma.sync ring of 3 stages of 128 + 128 rows of 128 bytes outgrows the 128 x 136 floats
  // of the accumulator tile; 2 stages of 128 + 256 rows do not outgrow its 128 x 264.
  static_assert(config::mma_shared_bytes(128, 128, 3) == 3 * 256 * 128);
  static_assert(config::mma_shared_bytes(128, 256, 2) == 128 * 264 * 4);
  // The wgmma ring: stages of A, B (and an exact product's B rest), 8-byte barriers, staging.
  static_assert(config::wgmma_shared_bytes(128, 4, false, 1) ==
                4 * 256 * 128 + 2 * 8 * 4 + 2 * 64 * 40 * 4 + 1024);
  static_assert(config::wgmma_shared_bytes(64, 6, true, 2) == 6 * 256 * 128 + 3 * 8 * 6 + 1024);
  const kiln::KernelLaunch mma = kiln::specialize_gemm(product(512, DType::f16, "sm_80"), "m");
  CHECK(mma.config.shared ==
        unsigned(config::mma_shared_bytes(mma.tunables.at("bm"), mma.tunables.at("bn"),
                                          mma.tunables.at("stages"))));
  const kiln::KernelLaunch wg = kiln::specialize_gemm(product(512, DType::bf16, "sm_90a"), "m");
  CHECK(wg.config.shared ==
        unsigned(config::wgmma_shared_bytes(wg.tunables.at("bn"), wg.tunables.at("stages"), false,
                                            wg.tunables.at("split"))));
}

TEST_CASE("the GEMM descriptors render their instances and names") {
  kiln::GemmMmaTemplate mma;
  mma.dtype = DType::f32;
  mma.bm = 128, mma.bn = 64, mma.warps_m = 2, mma.warps_n = 2, mma.stages = 3;
  mma.a_layout = kiln::GemmLayout::k_contiguous, mma.b_layout = kiln::GemmLayout::mn_contiguous;
  mma.split = 2;
  CHECK(mma.expression() ==
        "kiln::gemm::gemm<float, kiln_epilogue, false, 128, 64, 32, 2, 2, 3, 0, 1, false, 2, 1>");
  CHECK(mma.name("m") == "m__128x64w2x2s3k2_kt_tf32");
  CHECK(mma.threads() == 128u);
  kiln::GemmWgmmaTemplate wg;
  wg.dtype = DType::f32;
  wg.bias = true, wg.bn = 128, wg.stages = 4, wg.exact = true, wg.columns = 8;
  CHECK(wg.expression() ==
        "kiln::gemm::gemm_sm90<float, kiln_epilogue, true, 128, 4, 0, 8, true, 1, false, false>");
  CHECK(wg.name("l") == "l__wg128x128s4_kk_bias");
  kiln::GemmSkinnyTemplate sk;
  sk.rows = 4, sk.columns = 32, sk.n_contiguous = true, sk.split = 4;
  CHECK(sk.expression() == "kiln::gemm::gemm_skinny<float, kiln_epilogue, false, 4, 4, true, 32>");
  CHECK(sk.name("s") == "s__rows4x32k4_n");
}

TEST_CASE("an epilogue whose outputs are all 16-bit takes kiln::op::fast's exp, rsqrt and silu") {
  kiln::codegen::Body body;
  body.inputs = {DType::f32};
  body.steps.push_back({"kiln::op::Silu", {{kiln::codegen::Ref::Kind::input, 0}}});
  body.steps.push_back({"kiln::op::Add",
                        {{kiln::codegen::Ref::Kind::step, 0}, {kiln::codegen::Ref::Kind::input, 0}}});
  body.results = {{kiln::codegen::Ref::Kind::step, 1}};
  const kiln::codegen::Body fast = kiln::codegen::fast_math(body);
  CHECK(fast.steps[0].functor == "kiln::op::fast::Silu");
  CHECK(fast.steps[1].functor == "kiln::op::fast::Add");  // op's own, through the using-directive
  CHECK(kiln::codegen::fast_math(fast).steps[0].functor == "kiln::op::fast::Silu");
  for (DType t : {DType::f16, DType::bf16, DType::f32}) {
    body.outputs = {t};
    const std::string source = kiln::gemm_source("gemm.cuh", body);
    CAPTURE(kiln::name_of(t));
    CHECK((source.find("kiln::op::fast::Silu") != std::string::npos) == (t != DType::f32));
  }
}
