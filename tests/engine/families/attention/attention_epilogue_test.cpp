// Attention's elementwise consumers (a cast, a scale, a gate, a residual add) fused as its
// epilogue: one kernel where they fit its parameter block's slots, the result written only where
// something else reads it, the lse and folded factors beside them; the launch's epilogue slots;
// NVRTC compiles of every path with an epilogue and nothing spilled; on the GPU, fused and unfused
// against fp64 on each path.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "engine/compiler/compiler.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/families/attention/attention.hpp"
#include "tests/engine/families/attention/attention_launch.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Graph;
using kiln::Value;

namespace cfg = kiln::attention::config;

namespace {

using Call = kiln::test::AttentionResultCall;
using kiln::test::attention_call;
using kiln::test::plan_kernels;

}  // namespace

TEST_CASE("attention's cast, scale, gate and residual add are one kernel with it") {
  Call c = attention_call();
  const Value r = c.g.input("r", {2, 4, 300, 64}, DType::bf16);
  const Value gate = c.g.input("gate", {300, 64}, DType::f32);  // broadcast over batch and heads
  c.g.output(kiln::cast(c.o * 1.5 * kiln::sigmoid(gate) + r, DType::f32), "y");
  for (const char* arch : {"sm_90a", "sm_80"}) {
    const auto ks = plan_kernels(c.g, arch);
    REQUIRE(ks.size() == 1);
    CAPTURE(ks[0].name);
    CHECK(ks[0].name.rfind("attention__", 0) == 0);
    CHECK(ks[0].ops.size() == 6);
  }
  CHECK(kiln::Plan(c.g, false).kernels().size() == 6);
  // Its source defines the epilogue and names it in the kernel's instance.
  const auto specs = kiln::plan_specs(c.g);
  REQUIRE(specs.size() == 1);
  CHECK(specs[0].source.find("struct kiln_epilogue") != std::string::npos);
  CHECK(specs[0].expression.find(", kiln_epilogue>") != std::string::npos);
  // Without consumers, the kernel and its source are those of the bare call.
  Call bare = attention_call();
  bare.g.output(bare.o, "o");
  const auto plain = kiln::plan_specs(bare.g);
  REQUIRE(plain.size() == 1);
  CHECK(plain[0].source == "#include <kiln/attention_sm90.cuh>\n");
  CHECK(plain[0].expression.find("kiln_epilogue") == std::string::npos);
}

TEST_CASE("attention's epilogue: the result also an output, the lse and a folded factor beside") {
  {  // the result read elsewhere as well: one kernel writes both
    Call c = attention_call();
    c.g.output(c.o, "o");
    c.g.output(kiln::cast(c.o, DType::f32), "o32");
    const auto ks = plan_kernels(c.g);
    REQUIRE(ks.size() == 1);
    CHECK(ks[0].ops == std::vector<std::string>{c.g.node(c.o.id()).name, "o32"});
  }
  {  // the lse joins the kernel with an epilogue; a factor on q folds into its scale
    Call c = attention_call();
    const Value q = c.q * 0.5;
    const Value o = kiln::apply("attention", {q, c.k, c.v});
    c.g.output(o * 2.0, "y");
    c.g.output(kiln::apply("attention_lse", {q, c.k, c.v}), "lse");
    const auto ks = plan_kernels(c.g);
    REQUIRE(ks.size() == 1);
    CAPTURE(ks[0].name);
    CHECK(ks[0].name.rfind("attention__mul_bf16__wg", 0) == 0);  // the factor not in its name
  }
  {  // an epilogue reading a row op's result: the lse, planned before that row op, stays apart
    Graph g;
    const Value x = g.input("x", {2, 4, 300, 64}, DType::bf16);
    const Value sm = kiln::apply("softmax", {x}, Attrs().set("axis", -1));  // before attention
    const Value q = g.input("q", {2, 4, 300, 64}, DType::bf16);
    const Value k = g.input("k", {2, 2, 300, 64}, DType::bf16);
    const Value v = g.input("v", {2, 2, 300, 64}, DType::bf16);
    g.output(kiln::apply("attention", {q, k, v}) + sm, "y");
    g.output(kiln::apply("attention_lse", {q, k, v}), "lse");
    const auto ks = plan_kernels(g);
    REQUIRE(ks.size() == 3);
    CHECK(ks[0].name.rfind("attention_lse_f32__", 0) == 0);
    CHECK(ks[1].name.rfind("softmax", 0) == 0);
    CHECK(ks[2].name.rfind("attention__add_bf16__", 0) == 0);
  }
}

TEST_CASE("attention's scaled result, laid out for the output projection, needs no copy") {
  // QKV projection -> attention -> a * 0.5 -> [B, S, H, D] -> [B, S, H*D] -> output projection:
  // the scale is attention's epilogue, its result written as [B, S, H, D], which the output
  // projection's reshape reads in place.
  std::ifstream f(std::string(KILN_SOURCE_DIR) + "/tests/regressions/" +
                  "hand-attention-output-laid-out-for-its-projection.json");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string a = R"({"name": "t", "op": "permute", "args": ["a"])";
  const std::size_t at = text.find(a);
  REQUIRE(at != std::string::npos);
  text.replace(at, a.size(),
               R"({"name": "half", "op": "mul", "args": ["a", 0.5]},
    {"name": "t", "op": "permute", "args": ["half"])");
  const Graph g = Graph::parse(text);
  for (const char* arch : {"sm_90a", "sm_80"}) {
    const auto ks = plan_kernels(g, arch);
    CAPTURE(arch);
    REQUIRE(ks.size() == 3);
    CHECK(ks[1].name.rfind("attention__mul_bf16__", 0) == 0);
  }
}

TEST_CASE("an epilogue past the kernel's slots leaves its last consumers a kernel of their own") {
  {  // four tensors: the output and three residuals fit
    Call c = attention_call();
    Value y = c.o;
    for (int i = 0; i < 3; ++i)
      y = y + c.g.input(fmt::format("r{}", i), {2, 4, 300, 64}, DType::bf16);
    c.g.output(y, "y");
    CHECK(plan_kernels(c.g).size() == 1);
  }
  {  // five do not: the sum runs after the attention kernel, which writes its result
    Call c = attention_call();
    Value y = c.o;
    for (int i = 0; i < 4; ++i)
      y = y + c.g.input(fmt::format("r{}", i), {2, 4, 300, 64}, DType::bf16);
    c.g.output(y, "y");
    const auto ks = plan_kernels(c.g);
    REQUIRE(ks.size() == 2);
    CHECK(ks[0].name.rfind("attention_bf16__wg", 0) == 0);
  }
  {  // eight scalars fit, nine do not
    for (int n : {8, 9}) {
      Call c = attention_call();
      Value y = c.o;
      for (int i = 0; i < n; ++i) y = y * (1.0 + 0.01 * i);
      c.g.output(y, "y");
      CAPTURE(n);
      CHECK(plan_kernels(c.g).size() == (n == 8 ? 1u : 2u));
    }
  }
  {  // two outputs and two inputs fit (output 0 at the result's own slot)
    Call c = attention_call();
    const Value a = c.g.input("a", {2, 4, 300, 64}, DType::bf16);
    const Value b = c.g.input("b", {64}, DType::bf16);
    c.g.output(c.o + a, "y1");
    c.g.output(c.o * b, "y2");
    c.g.output(c.o, "o");
    CHECK(plan_kernels(c.g).size() == 1);
  }
}

TEST_CASE("attention's epilogue: results of more than three batch dims stay apart") {
  // Four batch dims must merge into the kernel's three; an epilogue operand's strides may not.
  Graph g;
  const Value q = g.input("q", {2, 2, 2, 2, 4, 64, 64}, DType::bf16);
  const Value o = kiln::apply("attention", {q, q, q});
  g.output(o + g.input("r", {2, 2, 2, 2, 4, 64, 64}, DType::bf16), "y");
  CHECK(plan_kernels(g).size() == 2);
  Graph h;  // three batch dims: one kernel
  const Value q3 = h.input("q", {2, 2, 2, 4, 64, 64}, DType::bf16);
  h.output(kiln::apply("attention", {q3, q3, q3}) + h.input("r", {2, 2, 2, 4, 64, 64}, DType::bf16),
           "y");
  CHECK(plan_kernels(h).size() == 1);
}

TEST_CASE("a long elementwise chain reusing its values after attention plans (each node once)") {
  // y = y * y + y, 60 times over: walking every path from the last node back to attention would
  // take 2^60 steps.
  Call c = attention_call();
  Value y = c.o;
  for (int i = 0; i < 60; ++i) y = y * y + y;
  const Value t = kiln::apply("permute", {y}, Attrs().set("dims", kiln::Shape{0, 2, 1, 3}));
  c.g.output(kiln::apply("reshape", {t}, Attrs().set("shape", kiln::Shape{2, 300, 256})), "out");
  CHECK(plan_kernels(c.g).size() >= 2);
}

TEST_CASE("an attention launch's epilogue slots: outputs after the first, inputs, scalars") {
  Call c = attention_call();
  const Value r = c.g.input("r", {2, 1, 300, 64}, DType::f32);  // broadcast over heads
  c.g.output(c.o + r, "y1");
  c.g.output(kiln::cast(c.o * 3.0, DType::f32), "y2");
  cfg::Params p{};
  const kiln::KernelLaunch L = kiln::test::attention_launch(c.g, p);
  // Pointers: y1 (kOut), y2 (slot 0), q, k, v, r (slot 1).
  REQUIRE(L.layout.pointers.size() == 6);
  CHECK(L.layout.pointers[0].offset == cfg::pointer_offset(cfg::kOut));
  const auto epi = [](int j) {
    return std::uint32_t(offsetof(cfg::Params, epi) + offsetof(cfg::EpilogueSlots, ptr) + 8 * j);
  };
  CHECK(L.layout.pointers[1].offset == epi(0));
  CHECK(L.layout.pointers[5].offset == epi(1));
  // r's strides over the result's [batch, heads, rows, cols]: 0 along the heads.
  CHECK(p.epi.s[1].head == 0);
  CHECK(p.epi.s[1].row == 64);
  CHECK(p.epi.s[1].col == 1);
  CHECK(p.epi.s[1].batch[cfg::kBatchDims - 1] == 300 * 64);
  CHECK(p.epi.s[0].batch[cfg::kBatchDims - 1] == 4 * 300 * 64);  // y2, row-major
  CHECK(p.epi.scalars[0] == 3.0f);
}

TEST_CASE("attention kernels with an epilogue NVRTC-compile on every path with nothing spilled") {
  struct Path {
    DType t;
    std::int64_t sq, d;
    bool mask;
  };
  // sm_90a's wgmma kernel, its mma kernel (a mask), decode, the f32 kernel; D 256 on mma.
  const Path paths[] = {{DType::bf16, 300, 128, false},
                        {DType::f16, 300, 64, true},
                        {DType::bf16, 3, 128, false},
                        {DType::f32, 77, 40, false},
                        {DType::bf16, 300, 256, false}};
  for (const char* arch : {"sm_90a", "sm_80"})
    for (const Path& p : paths) {
      Call c = attention_call(p.t, p.sq, p.d, Attrs().set("causal", true));
      Value o = c.o;
      if (p.mask)
        o = kiln::apply("attention", {c.q, c.k, c.v, c.g.input("m", {p.sq, 300}, DType::boolean)});
      const Value r = c.g.input("r", {2, 4, p.sq, p.d}, p.t);
      c.g.output(kiln::cast(o * kiln::sigmoid(r) + r, DType::f32), "y");
      c.g.output(o, "o");
      const auto specs = kiln::plan_specs(c.g, true, {}, nullptr, arch);
      REQUIRE(specs.size() == 1);
      const kiln::CompiledKernel ck = kiln::compiler::compile(specs[0], arch);
      CAPTURE(arch);
      CAPTURE(specs[0].name);
      CHECK(ck.spill_bytes == 0);
    }
}

TEST_CASE("gpu: attention with an epilogue against fp64, fused and unfused, on each path" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(61);
  struct Path {
    DType t;
    std::int64_t sq, d;
    bool mask;
  };
  const Path paths[] = {{DType::bf16, 300, 64, false},
                        {DType::f16, 129, 128, true},
                        {DType::bf16, 1, 128, false},
                        {DType::f16, 7, 80, false},
                        {DType::f32, 77, 40, false}};
  for (const Path& p : paths) {
    Call c = attention_call(p.t, p.sq, p.d,
                            Attrs().set("causal", true).set("causal_align", "bottom_right"));
    std::vector<kiln::GraphArg> args = {c.q, c.k, c.v};
    if (p.mask) args.push_back(c.g.input("m", {p.sq, 300}, p.t));
    const Attrs causal = Attrs().set("causal", true).set("causal_align", "bottom_right");
    const Value o = kiln::apply("attention", args, causal);
    const Value r = c.g.input("r", {2, 4, p.sq, p.d}, p.t);
    const Value gate = c.g.input("gate", {p.d}, DType::f32);
    c.g.output(kiln::cast(o * kiln::sigmoid(gate) + r, DType::f32), "y");
    c.g.output(o * 0.5, "half");
    c.g.output(kiln::apply("attention_lse", args, causal), "lse");
    CAPTURE(c.g.to_json());
    CHECK(kiln::Plan(c.g).kernels().size() == 1);
    for (const auto& f : kiln::test::check_on_gpu(e, c.g, rng, true)) FAIL_CHECK(f);
  }
}
