// where(cond, a, b), clamp(x, min, max) and cast(x, dtype).
#include "ops/op.hpp"

namespace kiln::ops {

std::vector<OpDef> select_ops() {
  const Domain any{-4, 4};
  return {
      {"where",
       {"cond", "a", "b"},
       "kiln::op::Where",
       Rule::select,
       any,
       [](double c, double a, double b) { return c != 0 ? a : b; }},
      {"clamp",
       {"x"},
       "kiln::op::Clamp",
       Rule::arithmetic,
       any,
       [](double x, double lo, double hi) { return x < lo ? lo : (x > hi ? hi : x); }},
      {"copy", {"x"}, "kiln::op::Identity", Rule::arithmetic, any, [](double x, double, double) {
         return x;
       }},
      {"cast",
       {"x"},
       "kiln::op::Identity",
       Rule::cast,
       any,
       [](double x, double, double) { return x; }},
  };
}

}  // namespace kiln::ops
