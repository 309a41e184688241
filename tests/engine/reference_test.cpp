// The fp64 reference itself (CPU): where a plan rounds, and rounding applied where asked.
#include <doctest/doctest.h>

#include <cstring>

#include "tests/engine/reference.hpp"

using kiln::DType;
using kiln::Graph;

TEST_CASE("reference: rounds where a plan rounds, and only there") {
  Graph g;
  auto x = g.input("x", {2, 8}, DType::f32);
  auto t = x * 3.0;                                   // 1: stays f32 inside the fused kernel
  kiln::Attrs to_bf16;
  to_bf16.dtype = DType::bf16;
  auto c = kiln::apply("cast", {t}, to_bf16);           // 2
  auto s = kiln::softmax(c * 1.0);                    // 3, 4
  g.output(s);
  const auto fused = kiln::test::rounding_of(g, true), unfused = kiln::test::rounding_of(g, false);
  REQUIRE(fused.size() == 5);
  CHECK_FALSE(fused[0]);
  CHECK_FALSE(fused[1]);
  CHECK(fused[2] == DType::bf16);  // a cast rounds even inside a kernel
  CHECK_FALSE(fused[3]);           // fused into the softmax's prologue
  CHECK(fused[4] == DType::bf16);  // the output, stored
  for (int id = 1; id < 5; ++id) CHECK(unfused[std::size_t(id)].has_value());

  // x = f32(1.1); x * 3 = 3.30000007 lies between the bf16 values 3.296875 and 3.3125 (their
  // spacing in [2, 4) is 2^-6) and rounds to the nearer one, 3.296875.
  std::vector<float> xs(16, 1.1f);
  std::map<std::string, std::vector<unsigned char>> in;
  in["x"].resize(16 * 4);
  std::memcpy(in["x"].data(), xs.data(), 64);
  const auto exact = kiln::test::evaluate(g, in);
  const auto rounded = kiln::test::evaluate(g, in, fused);
  CHECK(exact[2][0] == 3.0 * double(1.1f));
  CHECK(rounded[2][0] == 3.296875);
  CHECK(rounded[1][0] == exact[1][0]);
}
