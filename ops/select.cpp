// where(cond, a, b), clamp(x, min, max) and cast(x, dtype).
#include "ops/op.hpp"

namespace kiln::ops {

std::vector<OpDef> select_ops() {
  const Domain any{-4, 4};
  OpDef where{"where",
              {"cond", "a", "b"},
              "kiln::op::Where",
              Rule::select,
              any,
              [](double c, double a, double b) { return c != 0 ? a : b; }};
  where.doc = "a where cond is nonzero, else b (broadcast together).";
  OpDef clamp{"clamp",
              {"x"},
              "kiln::op::Clamp",
              Rule::arithmetic,
              any,
              [](double x, double lo, double hi) { return x < lo ? lo : (x > hi ? hi : x); }};
  clamp.attrs = {
      {"min", AttrType::number, std::nullopt, false, {}, "the lower bound; none if absent"},
      {"max", AttrType::number, std::nullopt, false, {}, "the upper bound; none if absent"},
  };
  clamp.doc = "x limited to [min, max] (min <= max).";
  OpDef copy{"copy", {"x"}, "kiln::op::Identity", Rule::arithmetic, any,
             [](double x, double, double) { return x; }};
  copy.doc = "x, as a new value.";
  copy.integers = true;
  OpDef cast{"cast", {"x"}, "kiln::op::Identity", Rule::cast, any,
             [](double x, double, double) { return x; }};
  cast.attrs = {{"dtype", AttrType::dtype, std::nullopt, true, {}, "the result's dtype"}};
  cast.doc =
      "x rounded to dtype (to bool: x != 0; a float to an integer truncated toward zero, "
      "saturating, NaN to 0; an integer to a narrower one wraps).";
  return {where, clamp, copy, cast};
}

}  // namespace kiln::ops
