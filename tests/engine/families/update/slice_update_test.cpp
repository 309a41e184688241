// slice_update: its shape, dtype and start rules; the plans it makes (its kernel writes into
// dst's memory, placed after every reader of the old value; refused where that cannot be); and
// on the GPU a KV cache's append at the first and last positions, with a start attribute and a
// start tensor replayed at moving starts, the cache's memory itself updated, and a start that
// leaves no room an ArgumentError that writes nothing.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Graph;
using kiln::Shape;
using kiln::test::desc;

namespace {

std::string infer_error(std::vector<kiln::Operand> args, Attrs attrs) {
  try {
    kiln::infer("slice_update", args, attrs);
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

std::string plan_error(const Graph& g) {
  try {
    kiln::Plan p(g);
    (void)p.kernels();
  } catch (const kiln::GraphError& e) {
    return e.what();
  }
  return "";
}

// A decoder step's KV append: the cache [B, H, S, D] takes k [B, H, 1, D] at `start` (an
// attribute, or the tensor "pos"), and a consumer reads the updated cache.
Graph kv_append(DType t, bool tensor_start, std::int64_t start = 0) {
  Graph g;
  const auto cache = g.input("cache", {2, 3, 9, 8}, t);
  const auto k = g.input("k", {2, 3, 1, 8}, t);
  const auto u = tensor_start ? kiln::slice_update(cache, kiln::exp(k * 0.5), 2,
                                                   g.input("pos", {1}, DType::i32))
                              : kiln::slice_update(cache, kiln::exp(k * 0.5), 2, start);
  g.output(kiln::reduce("sum", u) * 2.0, "y");
  return g;
}

}  // namespace

TEST_CASE("slice_update: shapes, dtypes, starts, and errors naming the call") {
  const auto dst = desc({4, 10, 6}, DType::bf16);
  CHECK(kiln::infer("slice_update", {dst, desc({4, 3, 6}, DType::f32)}, Attrs().set("axis", 1))
            .shape == Shape{4, 10, 6});
  CHECK(infer_error({dst, desc({4, 3, 6}, DType::bf16)}, Attrs().set("axis", 1).set("start", 8)) ==
        "slice_update(dst: bf16[4, 10, 6], src: bf16[4, 3, 6]): start 8 leaves no room for src's "
        "3 entries in axis 1 of extent 10");
  CHECK(infer_error({dst, desc({4, 3, 6}, DType::bf16)}, Attrs().set("axis", 1).set("start", -3))
            .empty());
  CHECK(infer_error({dst, desc({4, 3, 5}, DType::bf16)}, Attrs().set("axis", 1)) ==
        "slice_update(dst: bf16[4, 10, 6], src: bf16[4, 3, 5]): src's dim 2 (5) differs from "
        "dst's (6)");
  CHECK(infer_error({dst, desc({4, 3, 6}, DType::i32)}, Attrs().set("axis", 1)) ==
        "slice_update(dst: bf16[4, 10, 6], src: i32[4, 3, 6]): src's dtype i32 cannot be "
        "written into dst's bf16 (cast it)");
  CHECK(infer_error({dst, desc({4, 3, 6}, DType::bf16), desc({2}, DType::i32)},
                    Attrs().set("axis", 1))
            .find("pos must be a one-element i32 or i64 tensor") != std::string::npos);
  kiln::Engine offline(kiln::test::offline("sm_90a"));
  CHECK_THROWS_WITH_AS(kiln::call(offline, "slice_update", {dst, desc({4, 3, 6}, DType::bf16)}),
                       doctest::Contains("runs in a plan"), kiln::ArgumentError);
}

TEST_CASE(
    "slice_update's kernel writes into dst's memory after the old value's readers; "
    "refused where it cannot") {
  // src's chain, the update, the sum, its scaling (a reduction takes no epilogue)
  CHECK(kiln::Plan(kv_append(DType::f32, false, 4)).kernels().size() == 4);
  CHECK(kiln::Plan(kv_append(DType::f32, true)).kernels().size() == 4);
  {
    Graph g;  // the old value read first, the new one after: the write goes between
    const auto cache = g.input("cache", {4, 8}, DType::f32);
    g.output(kiln::reduce("max", cache), "old");
    g.output(kiln::reduce("sum", kiln::slice_update(cache, g.input("r", {4, 2}, DType::f32), 1, 6)),
             "new");
    CHECK(plan_error(g).empty());
  }
  {
    Graph g;  // one kernel reads both
    const auto cache = g.input("cache", {4, 8}, DType::f32);
    const auto u = kiln::slice_update(cache, g.input("r", {4, 2}, DType::f32), 1, 6);
    g.output(kiln::reduce("sum", u + cache), "y");
    CHECK(plan_error(g).find("whose old value kernel") != std::string::npos);
  }
  {
    Graph g;  // the result as an output
    const auto cache = g.input("cache", {4, 8}, DType::f32);
    g.output(kiln::slice_update(cache, g.input("r", {4, 2}, DType::f32), 1, 6), "u");
    CHECK(plan_error(g).find("cannot be an output") != std::string::npos);
  }
}

TEST_CASE(
    "gpu: a KV append writes the cache's memory at the first and last positions, and a "
    "start tensor replays at moving starts" *
    doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(151);
  for (DType t : kiln::kFloatDTypes)
    for (std::int64_t start : {0, 8, -1}) {
      const Graph g = kv_append(t, false, start);
      CAPTURE(g.to_json());
      for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
    }
  const Graph g = kv_append(DType::f32, true);
  const kiln::Plan plan(g);
  auto in = kiln::test::random_inputs(g, rng);
  const auto dev = kiln::test::upload(e, g, in);
  std::vector<float> cache(2 * 3 * 9 * 8), k(2 * 3 * 8);
  std::memcpy(cache.data(), in["cache"].data(), cache.size() * 4);
  std::memcpy(k.data(), in["k"].data(), k.size() * 4);
  for (std::int32_t pos : {0, 3, 8}) {  // each replay writes one more position of the cache
    const kiln::Tensor p = e.from_host({1}, DType::i32, &pos);
    auto views = dev.views;
    views["pos"] = p.view();
    const auto out = plan.replay(e, views);
    for (int b = 0; b < 6; ++b)
      for (int d = 0; d < 8; ++d)
        cache[std::size_t((b * 9 + pos) * 8 + d)] = std::exp(0.5f * k[std::size_t(b * 8 + d)]);
    std::vector<float> got(cache.size());
    dev.tensors.at("cache").copy_to_host(got.data());
    for (std::size_t i = 0; i < got.size(); ++i)
      REQUIRE_MESSAGE(std::fabs(got[i] - cache[i]) <= 1e-6f * (1 + std::fabs(cache[i])), "cache[",
                      i, "] after a replay at ", pos);
  }
  std::vector<float> before(cache.size());  // the cache as the replays left it
  dev.tensors.at("cache").copy_to_host(before.data());
  const std::int32_t bad = 9;
  const kiln::Tensor p = e.from_host({1}, DType::i32, &bad);
  auto views = dev.views;
  views["pos"] = p.view();
  CHECK_THROWS_WITH_AS(plan.run(e, views),
                       doctest::Contains("pos 'pos' holds index 9, outside [0, 9): it wrote "
                                         "nothing"),
                       kiln::ArgumentError);
  std::vector<float> after(cache.size());
  dev.tensors.at("cache").copy_to_host(after.data());
  CHECK(after == before);  // nothing written
}

TEST_CASE("slice_update: a window less aligned than dst gets stores no wider than it allows") {
  // bf16 dst rows of 24 (48 bytes), the window at column 1: 2 bytes past a 16-byte boundary.
  Graph g;
  const auto dst = g.input("dst", {4, 24}, DType::bf16);
  const auto u = kiln::slice_update(dst, kiln::exp(g.input("src", {4, 8}, DType::bf16)), 1, 1);
  g.output(kiln::reduce("sum", u), "y");
  const auto kernels = kiln::Plan(g).kernels();  // src's exp, the update, the sum
  REQUIRE(kernels.size() == 3);
  CHECK(kernels[1].name == "slice_update_bf16__r2v1");  // was v8: 16-byte stores 2 bytes off
  if (kiln::test::has_gpu()) {
    kiln::Engine e(kiln::test::on_gpu());
    auto rng = kiln::test::make_rng(47);
    for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
  }
}
