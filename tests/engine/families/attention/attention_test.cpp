// attention, the attention family on the CPU: its shape and dtype rule and errors, its
// attributes, its plan (operands read in place), the specialization (paths, names, tunables,
// a new length reusing the kernel). Its NVRTC compiles: attention_spill_test.cpp.
#include "engine/families/attention/attention.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <kiln/graph.hpp>
#include <kiln/ops.hpp>
#include <set>

#include "engine/exec/plan_specs.hpp"
#include "tests/engine/families/attention/attention_calls.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Graph;
using kiln::Shape;
using kiln::TensorView;
using kiln::test::attention_call;
using kiln::test::desc;

namespace {

template <class E>
std::string error_of(const std::vector<kiln::Operand>& args, const Attrs& a = {}) {
  try {
    kiln::infer("attention", args, a);
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

TensorView strided(Shape shape, Shape strides, DType t) {
  TensorView v = desc(std::move(shape), t);
  v.strides = std::move(strides);
  return v;
}

}  // namespace

TEST_CASE("attention: its shape and dtype, grouped heads, and errors naming every operand") {
  const TensorView q = desc({2, 8, 100, 64}, DType::bf16), kv = desc({2, 2, 37, 64}, DType::bf16);
  CHECK(kiln::infer("attention", {q, kv, kv}).shape == Shape{2, 8, 100, 64});
  CHECK(kiln::infer("attention", {q, kv, kv}).dtype == DType::bf16);
  // a mask broadcast over batch and heads, kv_lens in the mask's place or after it
  const TensorView mask = desc({100, 37}, DType::boolean), lens = desc({2}, DType::i32);
  CHECK(kiln::infer("attention", {q, kv, kv, mask, lens}).shape == q.shape);
  CHECK(kiln::infer("attention", {q, kv, kv, lens}).shape == q.shape);
  CHECK(error_of<kiln::ShapeError>(
            {q, desc({2, 3, 37, 64}, DType::bf16), desc({2, 3, 37, 64}, DType::bf16)}) ==
        "attention(q: bf16[2, 8, 100, 64], k: bf16[2, 3, 37, 64], v: bf16[2, 3, 37, 64]): q's 8 "
        "heads are not a multiple of k and v's 3");
  CHECK(error_of<kiln::ShapeError>(
            {q, desc({2, 2, 37, 32}, DType::bf16), desc({2, 2, 37, 32}, DType::bf16)})
            .find("k and v have head size 32, q 64") != std::string::npos);
  CHECK(error_of<kiln::ShapeError>({q, kv, desc({2, 2, 36, 64}, DType::bf16)})
            .find("k and v must be of one shape") != std::string::npos);
  CHECK(error_of<kiln::ShapeError>({desc({8, 64}, DType::bf16), kv, kv}).find("3 or more") !=
        std::string::npos);
  CHECK(error_of<kiln::ShapeError>({desc({3, 8, 100, 64}, DType::bf16), kv, kv})
            .find("same batch dims") != std::string::npos);
  CHECK(error_of<kiln::ShapeError>({desc({1, 1, 4, 320}, DType::f16),
                                    desc({1, 1, 4, 320}, DType::f16),
                                    desc({1, 1, 4, 320}, DType::f16)})
            .find("head size 320 is outside 1 to 256") != std::string::npos);
  CHECK(error_of<kiln::DtypeError>({q, desc({2, 2, 37, 64}, DType::f16), kv})
            .find("must be of one dtype") != std::string::npos);
  CHECK(error_of<kiln::DtypeError>({desc({2, 8, 100, 64}, DType::i32), kv, kv})
            .find("float tensors") != std::string::npos);
  CHECK(error_of<kiln::ShapeError>({q, kv, kv, desc({100, 36}, DType::f32)})
            .find("mask does not broadcast to [2, 8, 100, 37]") != std::string::npos);
  CHECK(error_of<kiln::ShapeError>({q, kv, kv, desc({3}, DType::i64)})
            .find("kv_lens must be of shape [B]") != std::string::npos);
  CHECK(error_of<kiln::DtypeError>({q, kv, kv, mask, mask}).find("kv_lens must be i32 or i64") !=
        std::string::npos);
  CHECK(error_of<kiln::ArgumentError>({q, kv, kv, lens, mask}).find("kv_lens comes last") !=
        std::string::npos);
  CHECK(error_of<kiln::ArgumentError>({q, kv, 2.0}).find("v must be a tensor") !=
        std::string::npos);
}

TEST_CASE("attention's attributes: causal, causal_align (a choice of two words), scale") {
  const TensorView q = desc({1, 4, 16, 64}, DType::f16);
  CHECK(error_of<kiln::ArgumentError>({q, q, q}, Attrs().set("causal_align", "bottom"))
            .find("causal_align=\"bottom\" is not one of top_left, bottom_right") !=
        std::string::npos);
  CHECK(error_of<kiln::ArgumentError>({q, q, q}, Attrs().set("causal_align", 1))
            .find("causal_align") != std::string::npos);
  CHECK(error_of<kiln::ArgumentError>({q, q, q}, Attrs().set("is_causal", true))
            .find("unknown attribute") != std::string::npos);
  Graph g;
  const auto x = g.input("q", {1, 4, 16, 64}, DType::f16);
  g.output(kiln::apply(
               "attention", {x, x, x},
               Attrs().set("causal", true).set("causal_align", "bottom_right").set("scale", 0.25)),
           "y");
  CHECK(Graph::parse(g.to_json()).to_json() == g.to_json());
  CHECK(g.to_json().find(R"("causal_align":"bottom_right")") != std::string::npos);
}

TEST_CASE("attention is one kernel reading permuted q, k and v in place") {
  Graph g;
  // [B, S, H, D] projections seen as [B, H, S, D]: no copy
  const auto q = kiln::apply("permute", {g.input("q", {2, 100, 8, 64}, DType::bf16)},
                             Attrs().set("dims", {0, 2, 1, 3}));
  const auto k = kiln::apply("permute", {g.input("k", {2, 50, 2, 64}, DType::bf16)},
                             Attrs().set("dims", {0, 2, 1, 3}));
  const auto v = kiln::apply("permute", {g.input("v", {2, 50, 2, 64}, DType::bf16)},
                             Attrs().set("dims", {0, 2, 1, 3}));
  g.output(kiln::apply("attention", {q, k, v}, Attrs().set("causal", true)), "y");
  const auto kernels = kiln::Plan(g).kernels("sm_80");
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0].name == "attention_bf16__fa128x64s3r32_d64_causal");
}

TEST_CASE("QKV projection, attention and output projection plan as three kernels, no copy") {
  // The projection writes q, k and v as windows; attention reads them permuted in place and
  // writes its [B, H, S, D] result laid out as [B, S, H, D], which the output projection's
  // reshape reads in place.
  Graph g = Graph::load(std::string(KILN_SOURCE_DIR) + "/tests/regressions/" +
                        "hand-attention-output-laid-out-for-its-projection.json");
  const auto kernels = kiln::Plan(g).kernels("sm_90a");
  REQUIRE(kernels.size() == 3);
  CHECK(kernels[1].name == "attention_bf16__wg128x128s3_d64_causal");
  CHECK(kiln::Plan(g).kernels("sm_80")[1].name == "attention_bf16__fa128x64s3r32_d64_causal");
  // The result read by anything else as well keeps its row-major layout, and the reshape of its
  // permute is a copy.
  g.output(kiln::Value(&g, g.find("a")), "a");
  CHECK(kiln::Plan(g).kernels("sm_90a").size() == 4);
}

TEST_CASE("attention over a dynamic sequence length precompiles a bounded set of kernels") {
  const Graph g = Graph::parse(R"({"inputs": [
      {"name": "q", "shape": [2, 8, "?", 64], "dtype": "bf16"},
      {"name": "k", "shape": [2, 8, "?", 64], "dtype": "bf16"},
      {"name": "v", "shape": [2, 8, "?", 64], "dtype": "bf16"}],
    "nodes": [{"name": "o", "op": "attention", "args": ["q", "k", "v"], "attrs": {"causal": true}}],
    "outputs": ["o"]})");
  const auto kernels = kiln::Plan(g).kernels("sm_90a");
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0].name == "attention_bf16__buckets");
  // Self-attention: the decode path up to 16 query rows, the sm_90a path past them.
  std::set<std::string> names;
  for (const kiln::KernelSpec& s : kiln::plan_specs(g)) names.insert(s.name);
  CHECK(names == std::set<std::string>{"attention_bf16__dec32s3w4k1_d64_causal",
                                       "attention_bf16__wg128x128s3_d64_causal"});
  // A step of decoding over a cache of dynamic length: clusters of 2, then chunks merged
  // through the workspace as the keys grow, 5 kernels at most.
  const Graph step = Graph::parse(R"({"inputs": [
      {"name": "q", "shape": [2, 8, 1, 64], "dtype": "bf16"},
      {"name": "k", "shape": [2, 8, "?", 64], "dtype": "bf16"},
      {"name": "v", "shape": [2, 8, "?", 64], "dtype": "bf16"}],
    "nodes": [{"name": "o", "op": "attention", "args": ["q", "k", "v"]}],
    "outputs": ["o"]})");
  std::set<std::string> steps;
  for (const kiln::KernelSpec& s : kiln::plan_specs(step)) steps.insert(s.name);
  CHECK(steps == std::set<std::string>{
                     "attention_bf16__dec32s3w4k1_d64", "attention_bf16__dec32s3w4k2_d64",
                     "attention_bf16__dec32s3w4k2c2_d64", "attention_bf16__dec32s3w4k2c4_d64",
                     "attention_bf16__dec32s3w4k2c8_d64"});
  // A length the probes did not meet runs a kernel among them.
  const Graph at = Graph::parse(R"({"inputs": [
      {"name": "q", "shape": [2, 8, 5, 64], "dtype": "bf16"},
      {"name": "k", "shape": [2, 8, 5, 64], "dtype": "bf16"},
      {"name": "v", "shape": [2, 8, 5, 64], "dtype": "bf16"}],
    "nodes": [{"name": "o", "op": "attention", "args": ["q", "k", "v"], "attrs": {"causal": true}}],
    "outputs": ["o"]})");
  CHECK(names.count(kiln::plan_specs(at).at(0).name) == 1);
}

TEST_CASE("the attention template's specialization: paths, names, tunables, lengths") {
  // D 128 on sm_90: 128 query rows a block, 32 a warp, tiles of 64 keys; before sm_90 that
  // many keys spill: tiles of 32.
  kiln::AttentionKernel big = attention_call(DType::bf16, {4, 16, 4096, 128}, {4, 16, 4096, 128});
  big.clusters = true;
  const kiln::KernelLaunch a = kiln::specialize_attention(big, "at", {});
  CHECK(a.spec.name == "at__fa128x64s2r32_d128");
  CHECK(a.config.block[0] == 128);
  CHECK(a.config.grid[0] == 32 * 64);
  CHECK(a.config.shared == (128 + 2 * 64 * 2) * 136 * 2);
  CHECK(a.spec.expression ==
        "kiln::attention::attention_mma<kiln::bf16, float, int, 128, 128, 64, 2, 32, false, false, "
        "0, false>");
  CHECK(a.tunables == kiln::Tunables{{"bm", 128}, {"bn", 64}, {"stages", 2}, {"wm", 32}});
  big.clusters = false;
  CHECK(kiln::specialize_attention(big, "at", {}).spec.name == "at__fa128x32s2r32_d128");
  // Another length, batch or head count: the same kernel.
  kiln::AttentionKernel other = attention_call(DType::bf16, {1, 4, 77, 128}, {1, 4, 1000, 128});
  other.clusters = true;
  CHECK(kiln::specialize_attention(other, "at", {}).spec.expression == a.spec.expression);
  // D 256: 64 x 32 tiles, Q read from shared memory; D 40 padded to 48.
  CHECK(kiln::specialize_attention(attention_call(DType::f16, {1, 2, 64, 256}, {1, 2, 64, 256}),
                                   "at", {})
            .spec.name == "at__fa64x32s2_d256");
  CHECK(kiln::specialize_attention(attention_call(DType::f16, {1, 2, 64, 40}, {1, 2, 64, 40}), "at",
                                   {})
            .spec.name == "at__fa128x64s3r32_d40");
  // f32, a head size not a multiple of 8, or D strided: the plain kernel.
  CHECK(kiln::specialize_attention(attention_call(DType::f32, {1, 2, 64, 64}, {1, 2, 64, 64}), "at",
                                   {})
            .spec.name == "at__rows_d64");
  CHECK(kiln::specialize_attention(attention_call(DType::bf16, {1, 2, 64, 20}, {1, 2, 64, 20}),
                                   "at", {})
            .spec.name == "at__rows_d20");
  // A mask: half as many keys a tile; above D 192 an additive one takes the plain kernel.
  kiln::AttentionKernel m = attention_call(DType::f16, {1, 2, 64, 160}, {1, 2, 64, 160});
  m.mask = desc({64, 64}, DType::boolean);
  CHECK(kiln::specialize_attention(m, "at", {}).spec.name == "at__fa64x16s2_d160_boolmask");
  m = attention_call(DType::f16, {1, 2, 64, 256}, {1, 2, 64, 256});
  m.mask = desc({64, 64}, DType::f16);
  CHECK(kiln::specialize_attention(m, "at", {}).spec.name == "at__rows_d256_mask");
  kiln::AttentionKernel t = attention_call(DType::bf16, {1, 2, 64, 64}, {1, 2, 64, 64});
  t.k = strided({1, 2, 64, 64}, {8192, 4096, 1, 64}, DType::bf16);
  CHECK(kiln::specialize_attention(t, "at", {}).spec.name == "at__rows_d64");
  // A [B, S, 3, H, D] projection read in place: the mma path.
  kiln::AttentionKernel qkv = attention_call(DType::bf16, {2, 4, 129, 64}, {2, 4, 129, 64});
  qkv.q = strided({2, 4, 129, 64}, {129 * 3 * 256, 64, 3 * 256, 1}, DType::bf16);
  qkv.k = qkv.v = qkv.q;
  CHECK(kiln::specialize_attention(qkv, "at", {}).spec.name == "at__fa128x64s3r32_d64");
  // tunables
  CHECK(kiln::specialize_attention(attention_call(DType::bf16, {1, 2, 64, 64}, {1, 2, 64, 64}),
                                   "at", {{"bm", 64}, {"bn", 128}, {"stages", 2}, {"wm", 16}})
            .spec.name == "at__fa64x128s2_d64");
  CHECK_THROWS_WITH_AS(
      kiln::specialize_attention(attention_call(DType::bf16, {1, 2, 64, 64}, {1, 2, 64, 64}), "at",
                                 {{"warps", 4}}),
      "at: 'warps' is not a tunable of the attention template's mma path (bm, bn, stages, wm)",
      kiln::ArgumentError);
  CHECK_THROWS_AS(
      kiln::specialize_attention(attention_call(DType::bf16, {1, 2, 64, 64}, {1, 2, 64, 64}), "at",
                                 {{"bn", 48}}),
      kiln::ArgumentError);
  CHECK_THROWS_AS(
      kiln::specialize_attention(attention_call(DType::f32, {1, 2, 64, 64}, {1, 2, 64, 64}), "at",
                                 {{"bn", 64}}),
      kiln::ArgumentError);
}

TEST_CASE("attention with no query heads or no keys plans an empty launch or zeros, no crash") {
  // No query heads: no blocks on either path (and no group of heads to divide by).
  for (std::int64_t sq : {1, 300})
    CHECK(kiln::specialize_attention(attention_call(DType::bf16, {1, 0, sq, 64}, {1, 2, 10, 64}),
                                     "at", {})
              .config.grid[0] == 0);
  // No keys: blocks that write zeros.
  CHECK(kiln::specialize_attention(attention_call(DType::bf16, {1, 4, 1, 64}, {1, 2, 0, 64}), "at",
                                   {})
            .config.grid[0] == 2);
}

TEST_CASE("an attention launch's parameter block holds its pointers, kv_lens in its own slot") {
  kiln::AttentionKernel k = attention_call(DType::bf16, {2, 4, 64, 64}, {2, 4, 64, 64});
  k.out.data = 0x10000, k.q.data = 0x20000, k.k.data = 0x30000, k.v.data = 0x40000;
  k.lens = desc({2}, DType::i32);
  k.lens->data = 0x50000;
  const kiln::KernelLaunch L = kiln::specialize_attention(k, "at", {});
  REQUIRE(L.layout.params.size() == 1);
  REQUIRE(L.layout.pointers.size() == 5);
  const std::uint64_t want[] = {0x10000, 0x20000, 0x30000, 0x40000, 0x50000};
  for (std::size_t i = 0; i < 5; ++i) {
    CAPTURE(i);
    std::uint64_t got = 0;
    std::memcpy(&got, L.layout.params[0].data() + L.layout.pointers[i].offset, 8);
    CHECK(got == want[i]);
    CHECK(L.pointers[i] == want[i]);
  }
  CHECK(L.layout.pointers[4].offset == 40);  // no mask: kv_lens keeps slot 5
}

TEST_CASE("the attention tuning space: candidates that fit, the default first") {
  const kiln::KernelLaunch a = kiln::specialize_attention(
      attention_call(DType::bf16, {4, 16, 4096, 128}, {4, 16, 4096, 128}), "at", {});
  const kiln::autotune::Space s = kiln::autotune::attention_space(a, 227 * 1024, true);
  kiln::autotune::DeviceLimits lim;
  lim.max_shared_bytes_per_block = 227 * 1024;
  const auto c = s.candidates(lim);
  CHECK(c.size() >= 8);
  CHECK(c.front() == a.tunables);
  const kiln::KernelLaunch f = kiln::specialize_attention(
      attention_call(DType::f32, {1, 2, 64, 64}, {1, 2, 64, 64}), "at", {});
  const kiln::autotune::Space none = kiln::autotune::attention_space(f, 227 * 1024, true);
  CHECK(none.tunables.empty());
  CHECK(none.candidates(lim).size() == 1);  // the default alone
}
