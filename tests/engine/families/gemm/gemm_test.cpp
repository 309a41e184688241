// The GEMM family without a GPU: matmul/linear shape and dtype rules, how views become the
// template's geometry (batch dims merged, layout classes), the epilogue fused into one kernel,
// and NVRTC compiles of its configurations for sm_80 and sm_90a with nothing spilled.
#include "engine/exec/plan_specs.hpp"
#include "engine/families/gemm/gemm.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <kiln/graph.hpp>
#include <kiln/ops.hpp>
#include <regex>
#include <set>

#include "engine/codegen/codegen.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/families/gemm/gemm_problem.hpp"
#include "engine/families/rows/rows.hpp"
#include "engine/passes/fusion.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;
using kiln::Shape;
using kiln::TensorView;
using kiln::test::desc;

namespace {

TensorView strided(Shape shape, Shape strides, DType t, std::uint64_t data = 256) {
  TensorView v = desc(std::move(shape), t);
  v.strides = std::move(strides);
  v.data = data;
  return v;
}

// The geometry of op(a, b) written to a contiguous result.
kiln::GemmProblem problem(const char* op, const TensorView& a, const TensorView& b) {
  kiln::GemmKernel k;
  k.op = &kiln::ops::find_op(op);
  k.a = a;
  k.b = b;
  TensorView out = kiln::infer(op, {a, b});
  out.data = 256;
  k.outputs = {out};
  k.epilogue = kiln::identity_epilogue(out.dtype);
  return kiln::gemm_problem(k, op);
}

std::string error_of(const char* op, const std::vector<kiln::Operand>& args,
                     const kiln::Attrs& attrs = {}) {
  try {
    kiln::infer(op, args, attrs);
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("matmul and linear: result shapes, and errors that name both operands") {
  CHECK(kiln::infer("matmul", {desc({64, 128}, DType::f32), desc({128, 32}, DType::f32)}).shape ==
        Shape{64, 32});
  CHECK(kiln::infer("matmul", {desc({3, 1, 5, 8}, DType::bf16), desc({2, 8, 4}, DType::bf16)})
            .shape == Shape{3, 2, 5, 4});
  CHECK(kiln::infer("matmul", {desc({8}, DType::f16), desc({2, 8, 4}, DType::f16)}).shape ==
        Shape{2, 4});
  CHECK(kiln::infer("matmul", {desc({2, 5, 8}, DType::f32), desc({8}, DType::f32)}).shape ==
        Shape{2, 5});
  CHECK(kiln::infer("linear", {desc({4, 7, 16}, DType::bf16), desc({32, 16}, DType::bf16),
                               desc({32}, DType::bf16)})
            .shape == Shape{4, 7, 32});
  CHECK(kiln::infer("linear", {desc({16}, DType::f32), desc({3, 16}, DType::f32)}).shape ==
        Shape{3});

  const std::string inner =
      error_of("matmul", {desc({64, 128}, DType::f32), desc({256, 32}, DType::f32)});
  CHECK(inner == "matmul(a: f32[64, 128], b: f32[256, 32]): inner dims 128 != 256");
  CHECK_THROWS_AS(kiln::infer("matmul", {desc({64, 128}, DType::f32), desc({256, 32}, DType::f32)}),
                  kiln::ShapeError);
  CHECK(error_of("matmul", {desc({4, 8}, DType::bf16), desc({8, 2}, DType::f32)})
            .find("a is bf16 and b is f32") != std::string::npos);
  CHECK_THROWS_AS(
      kiln::infer("matmul", {desc({4, 8}, DType::boolean), desc({8, 2}, DType::boolean)}),
      kiln::DtypeError);
  CHECK(error_of("matmul", {desc({3, 4, 8}, DType::f32), desc({2, 8, 2}, DType::f32)})
            .find("batch dims do not broadcast") != std::string::npos);
  CHECK(error_of("matmul", {desc({}, DType::f32), desc({8, 2}, DType::f32)})
            .find("a is a scalar tensor") != std::string::npos);
  CHECK(error_of("linear",
                 {desc({4, 8}, DType::f32), desc({2, 8}, DType::f32), desc({3}, DType::f32)})
            .find("bias must be a vector [2]") != std::string::npos);
  CHECK(error_of("linear", {desc({4, 8}, DType::f32), desc({2, 4, 8}, DType::f32)})
            .find("w must be a matrix [N, K]") != std::string::npos);
  CHECK(error_of("matmul", {desc({4, 8}, DType::f32), desc({8, 2}, DType::f32)}, {{"eps", 1e-3}}) ==
        "matmul: unknown attribute 'eps'; matmul's attributes are tf32");
  CHECK_THROWS_AS(kiln::infer("linear", {desc({4, 8}, DType::f32)}), kiln::ArgumentError);
}

TEST_CASE("GEMM geometry: batch dims fold into M where the views allow, layout classes") {
  // linear on x[4, 7, 16]: every row of x is one row of the product.
  kiln::GemmProblem p =
      problem("linear", desc({4, 7, 16}, DType::bf16), desc({32, 16}, DType::bf16));
  CHECK(p.m == 28);
  CHECK(p.n == 32);
  CHECK(p.k == 16);
  CHECK(p.batches == 1);
  CHECK(p.a_layout == kiln::GemmLayout::k_contiguous);
  CHECK(p.b_layout == kiln::GemmLayout::k_contiguous);  // w[N, K]: K contiguous
  // a batch of a with one b: folds; a batch of both: stays a batch.
  p = problem("matmul", desc({6, 5, 16}, DType::f16), desc({16, 24}, DType::f16));
  CHECK(p.m == 30);
  CHECK(p.batches == 1);
  CHECK(p.b_layout == kiln::GemmLayout::mn_contiguous);  // b[K, N] row-major: N contiguous
  p = problem("matmul", desc({6, 5, 16}, DType::f16), desc({6, 16, 24}, DType::f16));
  CHECK(p.m == 5);
  CHECK(p.batches == 6);
  // broadcast batch: a[3, 1, M, K] with b[2, K, N] gives two batch dims.
  p = problem("matmul", desc({3, 1, 5, 16}, DType::f32), desc({2, 16, 8}, DType::f32));
  CHECK(p.batches == 6);
  CHECK(p.batch_ext[2] == 3);
  CHECK(p.batch_ext[3] == 2);
  CHECK(p.slots[1].batch[3] == 0);  // a is broadcast along b's batch dim
  // transposed views: a as the transpose of a [K, M] tensor.
  p = problem("matmul", strided({40, 16}, {1, 40}, DType::bf16), desc({16, 8}, DType::bf16));
  CHECK(p.a_layout == kiln::GemmLayout::mn_contiguous);
  // K = 4095 in f16: rows of a start 8190 bytes apart, not a multiple of 16.
  p = problem("matmul", desc({3, 4095}, DType::f16), desc({4095, 7}, DType::f16));
  CHECK(p.a_layout == kiln::GemmLayout::strided);
  CHECK(p.b_layout == kiln::GemmLayout::strided);
  // a view 2 bytes off: strided.
  p = problem("matmul", strided({64, 64}, {64, 1}, DType::bf16, 258), desc({64, 64}, DType::bf16));
  CHECK(p.a_layout == kiln::GemmLayout::strided);
  // neither dim contiguous.
  p = problem("matmul", strided({8, 8}, {16, 2}, DType::f32), desc({8, 8}, DType::f32));
  CHECK(p.a_layout == kiln::GemmLayout::strided);
}

TEST_CASE("kiln plan: linear -> bias -> gelu -> residual add is one kernel") {
  Graph g;
  const auto x = g.input("x", {64, 256}, DType::bf16);
  const auto w = g.input("w", {512, 256}, DType::bf16);
  const auto b = g.input("b", {512}, DType::bf16);
  const auto r = g.input("r", {64, 512}, DType::bf16);
  g.output(kiln::gelu(kiln::apply("linear", {x, w}) + b) + r, "y");
  const auto kernels = kiln::Plan(g).kernels("sm_90a");
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0].name.rfind("linear__add_gelu_add_bf16__", 0) == 0);
  CHECK(kernels[0].ops.size() == 4);
  // Unfused: the product, then one kernel per elementwise op.
  CHECK(kiln::Plan(g, false).kernels("sm_90a").size() == 4);
  // The product read by something else as well is written too, by the same kernel.
  Graph two;
  const auto x2 = two.input("x", {64, 256}, DType::f32);
  const auto w2 = two.input("w", {512, 256}, DType::f32);
  const auto h = kiln::apply("linear", {x2, w2});
  two.output(h, "h");
  two.output(kiln::relu(h), "y");
  CHECK(kiln::Plan(two).kernels("sm_90a").size() == 1);
}

TEST_CASE("GEMM kernels NVRTC-compile for sm_80 and sm_90a with nothing spilled") {
  // Each dtype (f32 exact and TF32) and layout class, default tiles, with an epilogue.
  struct Case {
    DType t;
    bool tf32;
    TensorView a, b;
  };
  const std::vector<Case> cases = {
      {DType::bf16, false, desc({256, 128}, DType::bf16), desc({128, 256}, DType::bf16)},
      {DType::f16, false, strided({256, 128}, {1, 256}, DType::f16), desc({128, 40}, DType::f16)},
      {DType::f32, false, desc({64, 128}, DType::f32), desc({128, 256}, DType::f32)},
      {DType::f32, true, desc({256, 127}, DType::f32), desc({127, 256}, DType::f32)},
      // deep K, few tiles: split between the blocks of a cluster where clusters run
      {DType::f32, false, desc({16, 4096}, DType::f32), desc({4096, 256}, DType::f32)},
      // up to 8 rows: the skinny path, K along lanes (b transposed) or N (b row-major)
      {DType::f16, false, desc({3, 4096}, DType::f16), strided({4096, 100}, {1, 4096}, DType::f16)},
      {DType::bf16, false, desc({8, 512}, DType::bf16), desc({512, 100}, DType::bf16)},
      // f32 up to 32 rows with a small b: the skinny path in tiles of 8 rows; one row of 64
      // columns: tiles of 8 columns (more blocks)
      {DType::f32, false, desc({32, 256}, DType::f32), strided({256, 128}, {1, 256}, DType::f32)},
      {DType::f32, false, desc({1, 256}, DType::f32), strided({256, 64}, {1, 256}, DType::f32)},
      // f32 with both operands contiguous along K: wgmma on sm_90a, exact and plain TF32
      {DType::f32, false, desc({256, 128}, DType::f32), strided({128, 256}, {1, 128}, DType::f32)},
      {DType::f32, true, desc({256, 128}, DType::f32), strided({128, 256}, {1, 128}, DType::f32)},
  };
  for (const Case& c : cases)
    for (const char* arch : {"sm_80", "sm_90a"}) {
      Graph g;
      const auto a = g.input("a", c.a.shape, c.t);
      const auto b = g.input("b", c.b.shape, c.t);
      g.output(kiln::silu(kiln::matmul(a, b, c.tf32) * 0.5), "y");
      const auto specs = kiln::plan_specs(g, true, {{"a", c.a}, {"b", c.b}}, nullptr, arch);
      REQUIRE(specs.size() == 1);
      CAPTURE(specs[0].name);
      CAPTURE(arch);
      if (c.a.shape[0] == 16)
        CHECK((specs[0].name.find("k8_") != std::string::npos) == (std::string(arch) == "sm_90a"));
      const bool skinny = c.a.shape[0] <= 8 || (c.t == DType::f32 && !c.tf32 && c.a.shape[0] <= 32);
      CHECK(skinny == (specs[0].name.find("__rows") != std::string::npos));
      if (c.t == DType::f32 && c.b.strides == Shape{1, 128})
        CHECK((specs[0].name.find("__wg") != std::string::npos) == (std::string(arch) == "sm_90a"));
      if (c.a.shape == Shape{1, 256}) CHECK(specs[0].name.find("__rows1x8_k") != std::string::npos);
      if (c.a.shape == Shape{32, 256}) CHECK(specs[0].name.find("__rows8x") != std::string::npos);
      const kiln::CompiledKernel k = kiln::compiler::compile(specs[0], arch);
      CHECK(k.spill_bytes == 0);
      CAPTURE(k.log);
      CHECK(k.log.find("serialized") == std::string::npos);
      // A persistent wgmma kernel moves registers from the producer group to the consumers
      // (setmaxnreg 40 and 232): that takes the whole 168 a thread of 384, or it would hang.
      if (specs[0].name.find("__wg") != std::string::npos &&
          !std::regex_search(specs[0].name, std::regex("s[0-9]k[248]_")))
        CHECK(k.registers == 168);
    }
}

TEST_CASE("the few-row path's tiles NVRTC-compile for sm_80 and sm_90a with nothing spilled") {
  // Each tile width of each lane layout at 1 and 8 rows (f32 holds the most values a thread).
  struct Case {
    std::int64_t m, n, k;
    bool b_transposed;  // lanes along K
    const char* tile;
  };
  const std::vector<Case> cases = {
      {1, 64, 256, true, "rows1x8_k"},     {1, 5000, 96, true, "rows1x16_k"},
      {2, 20000, 40, true, "rows2x64_k"},  {32, 5000, 64, true, "rows8x64_k"},
      {32, 256, 128, true, "rows8x8_k"},   {1, 256, 4096, false, "rows1x32"},
      {8, 20000, 64, false, "rows8x64_n"}, {16, 256, 4096, false, "rows8x32"},
  };
  for (const Case& c : cases)
    for (const char* arch : {"sm_80", "sm_90a"}) {
      Graph g;
      const auto a = g.input("a", {c.m, c.k}, DType::f32);
      const auto b = g.input("b", {c.k, c.n}, DType::f32);
      g.output(kiln::gelu(kiln::apply("matmul", {a, b})), "y");
      const TensorView bv =
          c.b_transposed ? strided({c.k, c.n}, {1, c.k}, DType::f32) : desc({c.k, c.n}, DType::f32);
      const auto specs = kiln::plan_specs(g, true, {{"b", bv}}, nullptr, arch);
      REQUIRE(specs.size() == 1);
      CAPTURE(specs[0].name);
      CAPTURE(std::string(arch));
      CHECK(specs[0].name.find(c.tile) != std::string::npos);
      const kiln::CompiledKernel k = kiln::compiler::compile(specs[0], arch);
      CHECK(k.spill_bytes == 0);
    }
}

namespace {

// Compiles the bf16 product's kernel for `arch` with every `step`-th candidate of the tuning
// space of the wgmma path or the mma.sync one; returns the candidates that spilled or failed.
std::vector<std::string> compile_space(std::size_t step, const std::string& arch, bool wgmma) {
  kiln::GemmKernel k;
  k.arch = wgmma ? "sm_90a" : "sm_80";
  k.op = &kiln::ops::find_op("matmul");
  k.a = strided({512, 512}, {512, 1}, DType::bf16);
  k.b = strided({512, 512}, {512, 1}, DType::bf16);
  k.outputs = {strided({512, 512}, {512, 1}, DType::bf16)};
  k.epilogue = kiln::identity_epilogue(DType::bf16);
  const kiln::KernelLaunch base = kiln::specialize_gemm(k, "matmul_bf16");
  CHECK(base.tunables.count("wgmma") == wgmma);
  kiln::autotune::DeviceLimits limits;
  limits.max_shared_bytes_per_block = 227 * 1024;
  const auto candidates = kiln::autotune::gemm_space(base).candidates(limits);
  std::vector<std::string> bad;
  for (std::size_t i = 0; i < candidates.size(); i += step) {
    const kiln::KernelLaunch L =
        kiln::specialize_gemm(k, "matmul_bf16", kiln::gemm_tunables(candidates[i], "matmul_bf16"));
    try {
      const kiln::CompiledKernel c = kiln::compiler::compile(L.spec, arch);
      if (c.spill_bytes != 0 || c.log.find("serialized") != std::string::npos)
        bad.push_back(fmt::format("{}: {} bytes spilled; {}", L.spec.name, c.spill_bytes, c.log));
    } catch (const kiln::Error& e) {
      bad.push_back(fmt::format("{}: {}", L.spec.name, e.what()));
    }
  }
  MESSAGE(fmt::format("{} of {} candidates of the {} path compiled for {}",
                      (candidates.size() + step - 1) / step, candidates.size(),
                      wgmma ? "wgmma" : "mma.sync", arch));
  return bad;
}

}  // namespace

TEST_CASE("the few-row path's tuning space: tile widths and splits; refusals say why") {
  // One row, B contiguous along K (lanes along K: 8 to 64 columns) or along N (32 or 64).
  for (bool n_contiguous : {false, true}) {
    CAPTURE(n_contiguous);
    kiln::GemmKernel k;
    k.arch = "sm_90a";
    k.op = &kiln::ops::find_op("matmul");
    k.a = desc({1, 1024}, DType::f32);
    k.b =
        n_contiguous ? desc({1024, 256}, DType::f32) : strided({1024, 256}, {1, 1024}, DType::f32);
    k.outputs = {desc({1, 256}, DType::f32)};
    k.epilogue = kiln::identity_epilogue(DType::f32);
    const kiln::KernelLaunch base = kiln::specialize_gemm(k, "matmul_f32");
    REQUIRE(base.tunables.count("columns") == 1);
    CHECK(base.tunables.at("columns") == (n_contiguous ? 32 : 8));
    const auto candidates = kiln::autotune::gemm_space(base).candidates({});
    CHECK(candidates.size() == (n_contiguous ? 2u : 4u) * 4);  // widths x splits 1, 2, 4, 8
    std::set<std::string> names;
    for (const auto& c : candidates) {
      const kiln::KernelLaunch L =
          kiln::specialize_gemm(k, "matmul_f32", kiln::gemm_tunables(c, "matmul_f32"));
      CHECK(L.spec.name.find(fmt::format("rows1x{}", c.at("columns"))) != std::string::npos);
      CHECK(L.config.grid[0] == unsigned(256 / c.at("columns")));
      names.insert(L.spec.name);
    }
    CHECK(names.size() == candidates.size());
    kiln::GemmTunables narrow;
    narrow.columns = 16;
    if (n_contiguous)
      CHECK_THROWS_WITH_AS(kiln::specialize_gemm(k, "matmul_f32", narrow),
                           doctest::Contains("a tile of 16 columns: 8, 16, 32 or 64 (here 32 or "
                                             "64 where B is contiguous along N)"),
                           kiln::ArgumentError);
    else
      CHECK(kiln::specialize_gemm(k, "matmul_f32", narrow).spec.name.find("rows1x16") !=
            std::string::npos);
  }
  kiln::GemmKernel big;
  big.arch = "sm_90a";
  big.op = &kiln::ops::find_op("matmul");
  big.a = desc({256, 256}, DType::f32);
  big.b = desc({256, 256}, DType::f32);
  big.outputs = {desc({256, 256}, DType::f32)};
  big.epilogue = kiln::identity_epilogue(DType::f32);
  kiln::GemmTunables t;
  t.columns = 32;
  CHECK_THROWS_WITH_AS(kiln::specialize_gemm(big, "matmul_f32", t),
                       "matmul_f32: columns is a tunable of the few-row path only",
                       kiln::ArgumentError);
}

TEST_CASE("a sample of the GEMM tuning space compiles for sm_90a with nothing spilled") {
  for (const std::string& b : compile_space(16, "sm_90a", false)) FAIL_CHECK(b);
  for (const std::string& b : compile_space(1, "sm_90a", true)) FAIL_CHECK(b);
}

TEST_CASE(
    "the whole GEMM tuning space compiles for sm_80 and sm_90a with nothing spilled (long: "
    "run with --no-skip)" *
    doctest::skip(true)) {
  for (const char* arch : {"sm_80", "sm_90a"})
    for (const std::string& b : compile_space(1, arch, false)) FAIL_CHECK(b);
  for (const std::string& b : compile_space(1, "sm_90a", true)) FAIL_CHECK(b);
}
