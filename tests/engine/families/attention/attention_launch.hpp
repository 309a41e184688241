#pragma once
// What the attention tests share: a call's inputs, and the launch of a plan's attention kernel
// with its parameter block, planned for sm_90a.
#include <doctest/doctest.h>

#include <cstring>
#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "engine/families/attention/attention.hpp"
#include "engine/families/family.hpp"
#include "engine/passes/fusion.hpp"
#include "tests/support.hpp"

namespace kiln::test {

struct AttentionCall {
  Graph g;
  Value q, k, v;
};

/// Inputs q [2, 4, sq, d] and k, v [2, 2, 300, d] of dtype `t` (grouped heads) in c's graph,
/// filled in place: a Value keeps its graph's address.
inline void add_attention_inputs(AttentionCall& c, DType t = DType::bf16, std::int64_t sq = 300,
                                 std::int64_t d = 64) {
  c.q = c.g.input("q", {2, 4, sq, d}, t);
  c.k = c.g.input("k", {2, 2, 300, d}, t);
  c.v = c.g.input("v", {2, 2, 300, d}, t);
}

/// A call and its attention result.
struct AttentionResultCall : AttentionCall {
  Value o;
};

/// attention over q [2, 4, sq, d] and k, v [2, 2, 300, d] of dtype `t`, with attributes `a`.
inline AttentionResultCall attention_call(DType t = DType::bf16, std::int64_t sq = 300,
                                          std::int64_t d = 64, const Attrs& a = {}) {
  AttentionResultCall c;
  add_attention_inputs(c, t, sq, d);
  c.o = apply("attention", {c.q, c.k, c.v}, a);
  return c;
}

/// How many kernels `g`'s plan has, fused or one an op.
inline std::size_t kernel_count(const Graph& g, bool fuse = true) {
  return Plan(g, fuse).kernels().size();
}

/// The kernels of `g`'s fused plan for `arch`.
inline std::vector<PlanKernel> plan_kernels(const Graph& g, const char* arch = "sm_90a") {
  return Plan(g).kernels(arch);
}

/// The launch of `g`'s (first) attention kernel planned for sm_90a; its parameter block in `p`.
inline KernelLaunch attention_launch(const Graph& g, attention::config::Params& p) {
  std::vector<TensorView> values;
  for (const auto& n : g.nodes()) values.push_back(desc(n.shape, n.dtype));
  const Target target = target_of("sm_90a");
  const std::vector<FusedGroup> groups = fuse(g, true);
  view_values(g, groups, values);
  for (const FusedGroup& grp : groups) {
    if (!grp.anchor || grp.anchor->name != "attention") continue;
    KernelLaunch L = specialize_group({grp, values, g, g, target});
    REQUIRE(L.layout.params.at(0).size() == sizeof p);
    std::memcpy(&p, L.layout.params[0].data(), sizeof p);
    return L;
  }
  FAIL("no attention kernel");
  return {};
}

}  // namespace kiln::test
