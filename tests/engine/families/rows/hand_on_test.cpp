// Rows that hand their prologue on (engine/passes/fusion_hand_on.cpp): a row op's x that is also
// read outside its kernel is stored by that kernel, not by an elementwise kernel of its own.
#include <fmt/format.h>

#include <functional>
#include <kiln/graph.hpp>

#include "tests/engine/cases.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;

namespace {

std::vector<std::string> kernel_names(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& k : kiln::Plan(g).kernels()) out.push_back(k.name);
  return out;
}

// h = x + attn (an output), y = norm(h) (an output): the pre-norm transformer block; `more`
// adds to it, given x and h.
Graph residual_norm(const char* op, kiln::Shape shape, DType t, kiln::Attrs attrs = {},
                    const std::function<void(Graph&, kiln::Value, kiln::Value)>& more = {}) {
  Graph g;
  auto x = g.input("x", shape, t), attn = g.input("attn", shape, t);
  auto h = x + attn;
  g.output(h, "h");
  g.output(kiln::apply(op, {h}, attrs), "y");
  if (more) more(g, x, h);
  return g;
}

// Every row op that hands on, in each dtype, in one block's registers, split between blocks
// (sm_90) and along a middle axis (the column template); group_norm NCHW and channels_last
// with its x read again by the epilogue.
std::vector<Graph> hand_on_graphs() {
  std::vector<Graph> graphs;
  for (DType t : kiln::kFloatDTypes)
    for (const char* op : {"layer_norm", "rms_norm", "log_softmax"}) {
      graphs.push_back(residual_norm(op, {7, 1000}, t));
      graphs.push_back(residual_norm(op, {3, 65536}, t));
      if (std::string(op) == "log_softmax")
        graphs.push_back(residual_norm(op, {5, 33, 6}, t, kiln::Attrs().set("axis", 1)));
    }
  for (bool channels_last : {false, true}) {
    Graph g;
    auto x = kiln::test::nchw(g, {2, 64, 5, 7}, DType::bf16, channels_last);
    auto h = x + g.input("t", {2, 64, 1, 1}, DType::bf16);
    g.output(h, "h");
    g.output(kiln::silu(kiln::apply("group_norm", {h}, {{"groups", 32}})) + h * 0.5, "y");
    graphs.push_back(std::move(g));
  }
  return graphs;
}

}  // namespace

TEST_CASE("hand on: a norm's prologue value that is an output is stored by the norm's kernel") {
  for (const char* op : {"layer_norm", "rms_norm", "log_softmax"}) {
    CAPTURE(op);
    const auto names = kernel_names(residual_norm(op, {64, 1024}, DType::bf16));
    REQUIRE(names.size() == 1);
    CHECK(names[0].rfind(fmt::format("add__{}_bf16", op), 0) == 0);
  }
  // group_norm over NCHW, its x also read by the SiLU epilogue's residual.
  Graph g;
  auto x = g.input("x", {2, 64, 8, 8}, DType::f16), t = g.input("t", {2, 64, 1, 1}, DType::f16);
  auto h = x + t;
  g.output(h, "h");
  g.output(kiln::silu(kiln::apply("group_norm", {h}, {{"groups", 32}})) + h, "y");
  CHECK(kernel_names(g).size() == 1);
  // Not softmax: its kernel replaces the values it holds by their exponentials.
  CHECK(kernel_names(residual_norm("softmax", {64, 1024}, DType::bf16)).size() == 2);
  // Not where another kernel reads h before the norm's runs (a product of this depth), nor
  // where a view reads h's memory.
  Graph m;
  auto mx = m.input("x", {64, 64}, DType::f32), ma = m.input("attn", {64, 64}, DType::f32);
  auto mh = mx + ma;
  m.output(kiln::matmul(mh, mx), "p");
  m.output(kiln::apply("layer_norm", {mh}), "y");
  CHECK(kernel_names(m).size() == 3);
  const Graph v = residual_norm("layer_norm", {64, 1024}, DType::f32, {},
                                [](Graph& gv, kiln::Value, kiln::Value hv) {
                                  gv.output(kiln::reshape(hv * 1.0, {64 * 1024}), "flat");
                                  gv.output(kiln::reshape(hv, {64 * 1024}) * 3.0, "thrice");
                                });
  CHECK(kernel_names(v).size() >= 2);
  // Rows of a length known at run time (a bucket's kernel) hand on too.
  const Graph dyn = residual_norm("rms_norm", {8, -1}, DType::bf16);
  CHECK(kernel_names(dyn).size() == 1);
  for (const char* arch : {"sm_80", "sm_90a"}) {
    kiln::Engine e(kiln::test::offline(arch));
    CHECK_FALSE(kiln::Plan(dyn).compile(e).empty());
  }
  // Another output of the elementwise kernel stays there; h moves.
  const Graph o =
      residual_norm("layer_norm", {64, 1024}, DType::f32, {},
                    [](Graph& go, kiln::Value xo, kiln::Value) { go.output(xo * 2.0, "twice"); });
  const auto two = kernel_names(o);
  REQUIRE(two.size() == 2);
  CHECK(two[0].rfind("mul_f32", 0) == 0);
}

TEST_CASE("hand on: the GPU case's graphs are each one kernel, which NVRTC compiles") {
  kiln::Engine sm80(kiln::test::offline("sm_80")), sm90(kiln::test::offline("sm_90a"));
  for (const Graph& g : hand_on_graphs()) {
    CAPTURE(g.to_json());
    CHECK(kernel_names(g).size() == 1);
    for (kiln::Engine* e : {&sm80, &sm90})
      for (const auto& k : kiln::Plan(g).compile(*e)) CHECK(k.spill_bytes == 0);
  }
}

TEST_CASE("gpu: rows handing their prologue on match the fp64 reference, fused and not" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(48);
  const std::vector<Graph> graphs = hand_on_graphs();
  for (const Graph& g : graphs) {
    CAPTURE(g.to_json());
    for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
  }
  MESSAGE(fmt::format("{} graphs", graphs.size()));
}
