#include "ops/op.hpp"
#include "tests/support.hpp"

using kiln::test::desc;

using kiln::DType;
using kiln::TensorView;

TEST_CASE("catalog holds every elementwise op of docs/ops.md") {
  for (const char* name :
       {"neg",  "abs",     "exp",  "log",  "sqrt",      "rsqrt",   "sin",      "cos",
        "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu",    "softplus", "add",
        "sub",  "mul",     "div",  "pow",  "maximum",   "minimum", "eq",       "ne",
        "lt",   "le",      "gt",   "ge",   "where",     "clamp",   "cast"}) {
    CAPTURE(name);
    CHECK(kiln::ops::find_op(name).name == name);
  }
  CHECK_THROWS_WITH_AS(kiln::ops::find_op("frobnicate"), doctest::Contains("known ops: neg"),
                       kiln::ArgumentError);
}

TEST_CASE("broadcasting follows NumPy") {
  auto r = kiln::infer("add", {desc({8, 1, 5}, DType::f32), desc({3, 1}, DType::f32)});
  CHECK(r.shape == kiln::Shape{8, 3, 5});
  CHECK(kiln::infer("mul", {desc({4}, DType::bf16), 2.0}).shape == kiln::Shape{4});
  CHECK(kiln::infer("add", {desc({}, DType::f32), desc({2, 3}, DType::f32)}).shape ==
        kiln::Shape{2, 3});
  CHECK_THROWS_WITH_AS(kiln::infer("add", {desc({3, 4}, DType::f32), desc({5}, DType::f32)}),
                       doctest::Contains("add(a: f32[3, 4], b: f32[5])"), kiln::ShapeError);
}

TEST_CASE("dtype rules: promotion, comparisons, where, cast") {
  CHECK(kiln::infer("add", {desc({2}, DType::bf16), desc({2}, DType::bf16)}).dtype == DType::bf16);
  CHECK(kiln::infer("add", {desc({2}, DType::bf16), desc({2}, DType::f16)}).dtype == DType::f32);
  CHECK(kiln::infer("add", {desc({2}, DType::f16), desc({2}, DType::f32)}).dtype == DType::f32);
  CHECK(kiln::infer("mul", {desc({2}, DType::f16), 3.0}).dtype ==
        DType::f16);  // scalars do not promote
  CHECK(kiln::infer("lt", {desc({2}, DType::f32), 0.0}).dtype == DType::boolean);
  CHECK(kiln::infer("where", {desc({2}, DType::boolean), desc({2}, DType::bf16), 0.0}).dtype ==
        DType::bf16);
  CHECK(kiln::infer("where", {desc({2}, DType::f32), desc({2}, DType::f16), desc({2}, DType::f16)})
            .dtype == DType::f16);
  CHECK(kiln::infer("cast", {desc({2}, DType::f32)}, {{"dtype", "bf16"}}).dtype == DType::bf16);
  CHECK_THROWS_AS(kiln::infer("cast", {desc({2}, DType::f32)}), kiln::ArgumentError);
  CHECK_THROWS_WITH_AS(kiln::infer("add", {desc({2}, DType::boolean), desc({2}, DType::boolean)}),
                       doctest::Contains("cast them to a float dtype"), kiln::DtypeError);
}

TEST_CASE("bad calls are typed errors naming the op and operands") {
  CHECK_THROWS_WITH_AS(kiln::infer("add", {desc({2}, DType::f32)}),
                       doctest::Contains("takes 2 operand(s)"), kiln::ArgumentError);
  CHECK_THROWS_WITH_AS(kiln::infer("add", {1.0, 2.0}), doctest::Contains("at least one tensor"),
                       kiln::ArgumentError);
  CHECK_THROWS_AS(kiln::infer("neg", {desc({-1}, DType::f32)}), kiln::ShapeError);
  CHECK_THROWS_AS(kiln::infer("neg", {desc({1ll << 40, 1ll << 40}, DType::f32)}), kiln::ShapeError);
  CHECK_THROWS_AS(kiln::infer("clamp", {desc({2}, DType::f32)}, {{"min", 2.0}, {"max", 1.0}}),
                  kiln::ArgumentError);
  CHECK_THROWS_AS(kiln::parse_dtype("int7"), kiln::DtypeError);
}

TEST_CASE("CPU references on known values") {
  auto ref = [](const char* op, double a, double b = 0, double c = 0) {
    return kiln::ops::find_op(op).reference(a, b, c);
  };
  CHECK(ref("silu", 1.0) == doctest::Approx(0.7310585786300049));
  CHECK(ref("gelu", 1.0) == doctest::Approx(0.8413447460685429));
  CHECK(ref("gelu_tanh", 1.0) == doctest::Approx(0.8411919906082768));
  CHECK(ref("softplus", 0.0) == doctest::Approx(0.6931471805599453));
  CHECK(ref("softplus", 30.0) == 30.0);
  CHECK(ref("sigmoid", 0.0) == 0.5);
  CHECK(ref("rsqrt", 4.0) == 0.5);
  CHECK(std::isnan(ref("maximum", NAN, 1.0)));
  CHECK(ref("where", 0.0, 1.0, 2.0) == 2.0);
  CHECK(ref("clamp", 5.0, -1.0, 1.0) == 1.0);
  CHECK(ref("ge", 1.0, 1.0) == 1.0);
}

TEST_CASE("host f16/bf16 conversion rounds to nearest even and round-trips") {
  unsigned char buf[4];
  kiln::store_element(DType::f16, 1.0, buf);
  CHECK((buf[0] | buf[1] << 8) == 0x3c00);
  kiln::store_element(DType::f16, 65504.0, buf);
  CHECK((buf[0] | buf[1] << 8) == 0x7bff);
  kiln::store_element(DType::f16, 1.0 / 3.0, buf);
  CHECK((buf[0] | buf[1] << 8) == 0x3555);
  kiln::store_element(DType::bf16, 1.0 / 3.0, buf);
  CHECK((buf[0] | buf[1] << 8) == 0x3eab);
  for (DType t : {DType::f16, DType::bf16})
    for (unsigned bits = 0; bits < 65536; ++bits) {
      const unsigned char in[2] = {static_cast<unsigned char>(bits & 0xff),
                                   static_cast<unsigned char>(bits >> 8)};
      const double v = kiln::load_element(t, in);
      if (std::isnan(v)) continue;
      kiln::store_element(t, v, buf);
      if ((buf[0] | buf[1] << 8) != int(bits)) {
        CAPTURE(bits);
        FAIL_CHECK("round trip changed the bits");
      }
    }
}
