#include "tests/fuzz/attention_draw.hpp"

#include <fmt/format.h>

#include <vector>

namespace kiln::fuzz {
namespace {

constexpr std::int64_t kQueryRows[] = {1, 3, 16, 17, 64, 129, 300};
constexpr std::int64_t kKeys[] = {1, 7, 64, 129, 333};
constexpr std::int64_t kHeadSizes[] = {8, 20, 40, 64, 72, 128, 160};
const std::vector<std::int64_t> kToHeads = {0, 2, 1, 3};  // [B, S, H, D] <-> [B, H, S, D]

}  // namespace

Value attention_draw(Graph& g, DType dtype, std::mt19937_64& rng, int id) {
  auto chance = [&](int percent) { return int(rng() % 100) < percent; };
  auto pick = [&](const auto& list) { return list[rng() % (sizeof(list) / sizeof(list[0]))]; };
  const std::int64_t b = 1 + std::int64_t(rng() % 2), hkv = 1 + std::int64_t(rng() % 2);
  const std::int64_t hq = hkv * (std::int64_t(1) << (rng() % 3));
  const std::int64_t sq = pick(kQueryRows), skv = pick(kKeys), d = pick(kHeadSizes);
  // The fp64 reference's work per graph stays in the millions.
  if (b * hq * sq * skv * d > (std::int64_t(1) << 23)) throw ShapeError("fuzz: attention too big");
  // An operand [B, H, S, D], or [B, S, H, D] permuted to it (read in place).
  auto operand = [&](const char* name, std::int64_t heads, std::int64_t rows,
                     DType t) -> Value {
    if (chance(50)) return g.input(fmt::format("a{}{}", name, id), {b, heads, rows, d}, t);
    return apply("permute", {g.input(fmt::format("a{}{}", name, id), {b, rows, heads, d}, t)},
                 Attrs().set("dims", kToHeads));
  };
  Value key = operand("k", hkv, skv, dtype);
  // A positive factor on k folds into the kernel's scale (engine/passes/fusion_scale.cpp).
  if (chance(25)) key = chance(50) ? key * 0.75 : key / 1.5;
  // q = tanh(x), computed as attention's kernel loads q (fusion_prologues.cpp); a third of the
  // time from an f32 x cast to the dtype, chosen by the lengths so that the draws after it
  // stay as they were.
  const bool from_f32 = dtype != DType::f32 && (sq + skv) % 3 == 0;
  Value query = apply("tanh", {operand("q", hq, sq, from_f32 ? DType::f32 : dtype)});
  if (from_f32) query = cast(query, dtype);
  std::vector<GraphArg> args = {query, key, operand("v", hkv, skv, dtype)};
  Attrs at;
  if (chance(50)) {
    at.set("causal", true);
    if (chance(40)) at.set("causal_align", "bottom_right");
  }
  if (chance(25)) {
    const Value m = g.input(fmt::format("am{}", id), {sq, skv}, dtype);
    args.push_back(chance(50) ? m : apply("gt", {m, -3.0}));  // bool: keeps most keys
  }
  // Per-batch key lengths a third of the time (chosen by the shapes, as from_f32 is): an i32
  // input of whole numbers in [-2, 2] wrapped by Python's remainder into [0, Skv], so a batch
  // sees no key, a few, all but one or all of them (the kernels' tiles past a length, the
  // sm_90a path's cleared V rows).
  if ((b + hq + sq + d) % 3 == 1) {
    const Value n = g.input(fmt::format("alen{}", id), {b}, DType::i32);
    args.push_back(apply("remainder", {n, double(skv + 1)}));
  }
  const Value y = apply("attention", args, at);
  // The rows' log-sum-exp beside it, an output of the same kernel.
  if (chance(25)) g.output(apply("attention_lse", args, at), fmt::format("alse{}", id));
  // The result as it is, as [B, S, H, D], or as [B, S, H·D] (an output projection's operand):
  // elementwise consumers of either view are still attention's epilogue.
  if (chance(50)) return y;
  const Value t = apply("permute", {y}, Attrs().set("dims", kToHeads));
  return chance(50) ? t : apply("reshape", {t}, Attrs().set("shape", Shape{b, sq, hq * d}));
}

}  // namespace kiln::fuzz
