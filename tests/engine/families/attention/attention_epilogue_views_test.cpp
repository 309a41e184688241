// Attention's epilogue behind views: consumers of its result seen as [B, S, H·D] (a permute, a
// reshape merging dims) computed by its kernel, their tensors indexed through the views; what
// stays apart (the result read directly too, views with no inverse, a gather beside them); on
// the GPU, each path fused and unfused against fp64.
#include <doctest/doctest.h>

#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

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

// o [B, H, S, D] seen as [B, S, H·D]: the layout an output projection reads.
Value heads_merged(const Value& o, const kiln::Shape& bshd) {
  const Value t = kiln::apply("permute", {o}, Attrs().set("dims", kiln::Shape{0, 2, 1, 3}));
  return kiln::apply("reshape", {t},
                     Attrs().set("shape", kiln::Shape{bshd[0], bshd[1], bshd[2] * bshd[3]}));
}

}  // namespace

TEST_CASE("a residual added to attention's result seen as [B, S, H·D] is its epilogue") {
  Call c = attention_call();
  const Value m = heads_merged(c.o, {2, 300, 4, 64});
  const Value r = c.g.input("r", {2, 300, 256}, DType::bf16);
  c.g.output(m + r, "y");
  for (const char* arch : {"sm_90a", "sm_80"}) {
    const auto ks = plan_kernels(c.g, arch);
    CAPTURE(arch);
    REQUIRE(ks.size() == 1);
    CHECK(ks[0].name.rfind("attention__add_bf16__", 0) == 0);
    CHECK(ks[0].ops.size() == 4);  // attention, the permute, the reshape, the add
  }
  CHECK(kiln::Plan(c.g, false).kernels().size() >= 2);
  {  // the fp64 model of the plan steps through the views in the kernel
    Call f = attention_call(DType::f32, 30, 8);
    f.g.output(heads_merged(f.o, {2, 30, 4, 8}) + f.g.input("r", {2, 30, 32}, DType::f32), "y");
    REQUIRE(plan_kernels(f.g).size() == 1);
    auto rng = kiln::test::make_rng(5);
    for (const std::string& d : kiln::test::model_differences(f.g, rng, 1e-5)) FAIL_CHECK(d);
  }
  // The launch indexes r and y through the views: strides over [B, H, S, D].
  cfg::Params p{};
  kiln::test::attention_launch(c.g, p);
  for (const cfg::Strides& s : {p.s[cfg::kOut], p.epi.s[0]}) {
    CHECK(s.batch[cfg::kBatchDims - 1] == 300 * 256);
    CHECK(s.head == 64);
    CHECK(s.row == 256);
    CHECK(s.col == 1);
  }
  // A residual broadcast over the batch: stride 0 there.
  Call b = attention_call();
  b.g.output(heads_merged(b.o, {2, 300, 4, 64}) + b.g.input("r", {300, 256}, DType::f32), "y");
  REQUIRE(plan_kernels(b.g).size() == 1);
  kiln::test::attention_launch(b.g, p);
  CHECK(p.epi.s[0].batch[cfg::kBatchDims - 1] == 0);
  CHECK(p.epi.s[0].head == 64);
}

TEST_CASE("QKV projection, attention with the residual added as [B, S, H·D], output projection") {
  // The residual add reads attention's result through its permute and reshape: attention's
  // epilogue, whose result the output projection reads. Three kernels, the views in none.
  const Graph g = Graph::load(std::string(KILN_SOURCE_DIR) +
                              "/tests/regressions/hand-attention-residual-behind-views.json");
  for (const char* arch : {"sm_90a", "sm_80"}) {
    const auto ks = plan_kernels(g, arch);
    CAPTURE(arch);
    REQUIRE(ks.size() == 3);
    CHECK(ks[1].name.rfind("attention__add_bf16__", 0) == 0);
    CHECK(ks[1].ops == std::vector<std::string>{"a", "t", "m", "h"});
  }
}

TEST_CASE("attention's epilogue behind views: read elsewhere too, or views it cannot index") {
  {  // the output projection reads the merged heads as well: written laid out, read in place
    Call c = attention_call();
    const Value m = heads_merged(c.o, {2, 300, 4, 64});
    c.g.output(m + c.g.input("r", {2, 300, 256}, DType::bf16), "y");
    c.g.output(kiln::matmul(m, c.g.input("w", {256, 256}, DType::bf16)), "proj");
    const auto ks = plan_kernels(c.g);
    REQUIRE(ks.size() == 2);
    CHECK(ks[0].name.rfind("attention__add_bf16__", 0) == 0);
    CHECK(ks[1].name.rfind("matmul", 0) == 0);
  }
  {  // a reshape splitting a dim, and a slice: no inverse a kernel indexes by
    Call c = attention_call();
    const Value split =
        kiln::apply("reshape", {c.o}, Attrs().set("shape", kiln::Shape{2, 4, 300, 8, 8}));
    c.g.output(split + c.g.input("r", {2, 4, 300, 8, 8}, DType::bf16), "y");
    CHECK(plan_kernels(c.g).size() == 2);
    Call d = attention_call();
    const Value cut =
        kiln::apply("slice", {d.o}, Attrs().set("axis", 2).set("start", 0).set("stop", 100));
    d.g.output(cut + d.g.input("r", {2, 4, 100, 64}, DType::bf16), "y");
    CHECK(plan_kernels(d.g).size() >= 2);
  }
  {  // a pad read in place beside the views: the add gathers in an elementwise kernel
    Call c = attention_call();
    const Value x = c.g.input("x", {2, 300, 254}, DType::bf16);
    const Value padded = kiln::apply("pad", {x}, Attrs().set("pads", kiln::Shape{1, 1}));
    c.g.output(heads_merged(c.o, {2, 300, 4, 64}) + padded, "y");
    const auto ks = plan_kernels(c.g);
    REQUIRE(ks.size() >= 2);
    CHECK(ks[0].name.rfind("attention_bf16__", 0) == 0);
    kiln::Engine e(kiln::test::offline("sm_90a"));
    CHECK(kiln::Plan(c.g).compile(e).size() == ks.size());
  }
  {  // consumers of the result itself and of its views: one index map a kernel
    Call c = attention_call();
    c.g.output(c.o * 0.5, "half");
    c.g.output(heads_merged(c.o, {2, 300, 4, 64}) + c.g.input("r", {2, 300, 256}, DType::bf16),
               "y");
    const auto ks = plan_kernels(c.g);
    REQUIRE(ks.size() == 3);  // then the merged heads' copy and the add
    CHECK(ks[0].name.rfind("attention__mul_bf16__", 0) == 0);
    CHECK(ks[0].ops.size() == 2);
  }
}

TEST_CASE("gpu: attention's epilogue behind a permute and a reshape against fp64, on each path" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(67);
  struct Path {
    DType t;
    std::int64_t sq, d;
  };
  // sm_90a's wgmma kernel, mma (D 80), decode, the f32 kernel.
  for (const Path& p : {Path{DType::bf16, 300, 64}, Path{DType::f16, 129, 80},
                        Path{DType::bf16, 1, 128}, Path{DType::f32, 77, 40}}) {
    Call c = attention_call(p.t, p.sq, p.d, Attrs().set("causal", true));
    const Value m = heads_merged(c.o, {2, p.sq, 4, p.d});
    const Value r = c.g.input("r", {2, p.sq, 4 * p.d}, p.t);
    c.g.output(kiln::cast(m * 0.5 + r, DType::f32), "y");
    c.g.output(m * kiln::sigmoid(c.g.input("gate", {4 * p.d}, DType::f32)), "gated");
    CAPTURE(c.g.to_json());
    CHECK(kiln::Plan(c.g).kernels().size() == 1);
    for (const auto& f : kiln::test::check_on_gpu(e, c.g, rng, true)) FAIL_CHECK(f);
  }
  // A pad read in place beside the views: attention, then an elementwise kernel that gathers.
  Call c = attention_call(DType::f32, 30, 8);
  const Value x = c.g.input("x", {2, 30, 30}, DType::f32);
  c.g.output(heads_merged(c.o, {2, 30, 4, 8}) +
                 kiln::apply("pad", {x}, Attrs().set("pads", kiln::Shape{1, 1})),
             "y");
  CHECK(kiln::Plan(c.g).kernels().size() == 2);
  for (const auto& f : kiln::test::check_on_gpu(e, c.g, rng, true)) FAIL_CHECK(f);
}
