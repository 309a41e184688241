// The attention family's kernels NVRTC-compiled for sm_80 and sm_90a without a GPU: defaults of
// a table of calls, of a grid where registers are tightest, and samples of the tuning space, each
// with nothing spilled (issue 49: 0 spilled bytes for the defaults and every tuning candidate).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "engine/compiler/compiler.hpp"
#include "engine/families/attention/attention.hpp"
#include "tests/engine/families/attention/attention_calls.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Shape;
using kiln::test::attention_call;
using kiln::test::desc;

TEST_CASE("attention kernels NVRTC-compile for sm_80 and sm_90a with nothing spilled") {
  struct Case {
    DType t;
    std::int64_t d;
    bool causal;
    const char* align;
    std::optional<DType> mask;
    bool lens;
  };
  const std::vector<Case> cases = {
      {DType::bf16, 64, false, "top_left", std::nullopt, false},
      {DType::f16, 128, true, "top_left", std::nullopt, false},
      {DType::bf16, 40, true, "bottom_right", DType::boolean, true},
      {DType::f16, 80, false, "top_left", DType::f16, false},
      {DType::bf16, 160, true, "top_left", DType::f32, false},
      {DType::f16, 192, true, "bottom_right", DType::f16, true},
      {DType::bf16, 128, false, "top_left", DType::bf16, true},
      {DType::bf16, 128, true, "bottom_right", std::nullopt, true},  // key bounds at run time
      {DType::f16, 96, true, "top_left", std::nullopt, true},
      {DType::bf16, 80, true, "bottom_right", std::nullopt, false},
      {DType::f16, 128, false, "top_left", std::nullopt, true},
      {DType::bf16, 96, false, "top_left", std::nullopt, true},
      {DType::bf16, 256, false, "top_left", DType::boolean, false},
      {DType::bf16, 256, true, "bottom_right", std::nullopt, true},
      {DType::f32, 64, true, "top_left", DType::f32, true},
      {DType::f32, 256, false, "top_left", std::nullopt, false},
  };
  for (const char* arch : {"sm_80", "sm_90a"}) {
    kiln::Engine e(kiln::test::offline(arch));
    for (const Case& c : cases)
      for (std::int64_t sq : {333, 3}) {  // the mma path and the decode path
        std::vector<kiln::Operand> args = {desc({2, 8, sq, c.d}, c.t), desc({2, 2, 500, c.d}, c.t),
                                           desc({2, 2, 500, c.d}, c.t)};
        if (c.mask) args.push_back(desc({sq, 500}, *c.mask));
        if (c.lens) args.push_back(desc({2}, DType::i64));
        const kiln::KernelRecord r = kiln::precompile(
            e, "attention", args, Attrs().set("causal", c.causal).set("causal_align", c.align));
        CAPTURE(arch);
        CAPTURE(r.name);
        CHECK(r.spill_bytes == 0);
        CHECK(r.registers > 0);
      }
  }
}

// Where the defaults' registers are tightest: 32 rows a warp up to D 128, the diagonal and the
// key bounds (kv_lens) in registers of their own. A grid of every default
// (bench/trace/attention_spill_grid.py) once found 8 spilling here that the table above missed:
// each head size of that range, each causal alignment, with and without kv_lens, both archs.
TEST_CASE(
    "attention defaults at D 80 to 128, every causal alignment, with and without kv_lens, "
    "compile for sm_80 and sm_90a with nothing spilled") {
  for (const char* arch : {"sm_80", "sm_90a"}) {
    kiln::Engine e(kiln::test::offline(arch));
    for (std::int64_t d : {80, 96, 128})
      for (const char* align : {"none", "top_left", "bottom_right"})
        for (bool lens : {false, true}) {
          const DType t = d == 96 ? DType::f16 : DType::bf16;
          std::vector<kiln::Operand> args = {desc({2, 8, 333, d}, t), desc({2, 2, 500, d}, t),
                                             desc({2, 2, 500, d}, t)};
          if (lens) args.push_back(desc({2}, DType::i32));
          Attrs a;
          if (std::string(align) != "none") a.set("causal", true).set("causal_align", align);
          const kiln::KernelRecord r = kiln::precompile(e, "attention", args, a);
          CAPTURE(arch);
          CAPTURE(r.name);
          CHECK(r.spill_bytes == 0);
          CHECK(r.registers > 0);
        }
  }
}

namespace {

// Compiles every `step`-th candidate of the tuning space of a bf16 call of `sq` query rows at
// head size `d` (with an additive mask: `masked`; causal unless `causal` is false) for `arch`;
// returns those that spilled or failed.
std::vector<std::string> compile_space(std::int64_t d, bool masked, const std::string& arch,
                                       std::size_t step = 1, std::int64_t sq = 1000,
                                       bool causal = true) {
  kiln::AttentionKernel k = attention_call(DType::bf16, {2, 8, sq, d}, {2, 2, 1000, d});
  if (masked) k.mask = desc({sq, 1000}, DType::bf16);
  k.causal = causal;
  k.clusters = arch != "sm_80";
  const kiln::KernelLaunch base = kiln::specialize_attention(k, "attention_bf16", {});
  kiln::autotune::DeviceLimits limits;
  limits.max_shared_bytes_per_block = 227 * 1024;
  const auto candidates =
      kiln::autotune::attention_space(base, 227 * 1024, k.clusters).candidates(limits);
  std::vector<std::string> bad;
  for (std::size_t i = 0; i < candidates.size(); i += step) {
    const kiln::KernelLaunch L = kiln::specialize_attention(k, "attention_bf16", candidates[i]);
    try {
      const kiln::CompiledKernel ck = kiln::compiler::compile(L.spec, arch);
      if (ck.spill_bytes != 0)
        bad.push_back(fmt::format("{}: {} bytes spilled", L.spec.name, ck.spill_bytes));
    } catch (const kiln::Error& e) {
      bad.push_back(fmt::format("{}: {}", L.spec.name, e.what()));
    }
  }
  MESSAGE(fmt::format("Sq {} D {}{}{}: {} of {} candidates compiled for {}", sq, d,
                      masked ? " masked" : "", causal ? " causal" : "",
                      (candidates.size() + step - 1) / step, candidates.size(), arch));
  return bad;
}

}  // namespace

TEST_CASE("a sample of the attention tuning space compiles for sm_90a with nothing spilled") {
  for (const std::string& b : compile_space(128, false, "sm_90a", 5)) FAIL_CHECK(b);
  for (const std::string& b : compile_space(160, true, "sm_90a", 3)) FAIL_CHECK(b);
  for (const std::string& b : compile_space(128, false, "sm_90a", 9, 1)) FAIL_CHECK(b);
  for (const std::string& b : compile_space(256, true, "sm_90a", 9, 4)) FAIL_CHECK(b);
  for (const std::string& b : compile_space(128, false, "sm_90a", 5, 1000, false)) FAIL_CHECK(b);
}

TEST_CASE(
    "the whole attention tuning space compiles for sm_80 and sm_90a with nothing spilled (long: "
    "run with --no-skip)" *
    doctest::skip(true)) {
  for (const char* arch : {"sm_80", "sm_90a"})
    for (std::int64_t d : {40, 64, 80, 128, 160, 256})
      for (bool masked : {false, true})
        for (std::int64_t sq : {1000, 1})
          for (bool causal : {true, false})
            for (const std::string& b : compile_space(d, masked, arch, 1, sq, causal))
              FAIL_CHECK(b);
}
