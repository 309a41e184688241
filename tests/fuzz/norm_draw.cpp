#include "tests/fuzz/norm_draw.hpp"

#include <fmt/format.h>

#include <kiln/norms.hpp>

#include <optional>
#include <vector>

namespace kiln::fuzz {

Value group_norm_draw(Graph& g, const Value& a, std::mt19937_64& rng, int id) {
  auto chance = [&](int percent) { return int(rng() % 100) < percent; };
  Shape s = g.node(a.id()).shape;
  const DType t = g.node(a.id()).dtype;
  // Refused before any node is added: a draw that throws leaves nothing behind in `g`.
  if (s.size() < 2) throw ShapeError("fuzz: group_norm of a value of rank < 2");
  if (!is_float(t)) throw DtypeError("fuzz: group_norm of a value that is not float");
  Value x = a;
  if (s.size() == 2) {
    s.push_back(1);
    x = apply("reshape", {a}, Attrs().set("shape", s));
  } else if (s.size() == 3 && chance(50)) {
    x = apply("permute", {a}, Attrs().set("dims", std::vector<std::int64_t>{0, 2, 1}));
    std::swap(s[1], s[2]);
  }
  const std::int64_t c = s[1];
  std::vector<std::int64_t> divisors;
  for (std::int64_t d = 1; d <= c; ++d)
    if (c % d == 0) divisors.push_back(d);
  const std::int64_t groups = divisors[rng() % divisors.size()];
  std::vector<GraphArg> args = {x};
  if (chance(60)) {
    args.push_back(g.input(fmt::format("gw{}", id), {c}, t));
    if (chance(60)) args.push_back(g.input(fmt::format("gb{}", id), {c}, t));
  }
  return apply("group_norm", args, Attrs().set("groups", groups));
}

Value batch_norm_draw(Graph& g, const Value& a, std::mt19937_64& rng, int id) {
  auto chance = [&](int percent) { return int(rng() % 100) < percent; };
  const Shape s = g.node(a.id()).shape;
  const DType t = g.node(a.id()).dtype;
  if (s.size() < 2) throw ShapeError("fuzz: batch_norm of a value of rank < 2");
  if (!is_float(t)) throw DtypeError("fuzz: batch_norm of a value that is not float");
  const std::int64_t c = s[1];
  // Statistics of x's dtype or f32 (torch's running statistics of a half model may be either);
  // a variance made positive (|v| + 0.25), so that rsqrt stays finite on random inputs.
  const DType st = chance(50) ? t : DType::f32;
  auto stat = [&](const char* name) { return g.input(fmt::format("{}{}", name, id), {c}, st); };
  const Value mean = stat("bm"), var = apply("abs", {stat("bv")}) + 0.25;
  std::optional<Value> weight, bias;
  if (chance(60)) weight = stat("bw");
  if (chance(60)) bias = stat("bb");
  return batch_norm(a, mean, var, weight, bias, chance(50) ? 1e-5 : 1e-3);
}

}  // namespace kiln::fuzz
