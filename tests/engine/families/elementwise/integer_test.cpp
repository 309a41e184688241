// Integer dtypes (i32, i64): their rules on the CPU, their kernels on the GPU against host
// arithmetic written here (wrapping, floor division, Python's remainder, saturating casts).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <kiln/kiln.hpp>
#include <limits>

#include "engine/codegen/codegen.hpp"
#include "ops/op.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;
using kiln::test::desc;

namespace {

kiln::TensorView infer(const char* op, std::vector<kiln::Operand> args, kiln::Attrs attrs = {}) {
  return kiln::ops::infer_result(kiln::ops::find_op(op), args, attrs);
}

// Host arithmetic of the documented semantics, in int64 with I's wrapping.
template <class I>
I wrap(std::int64_t v) {
  return I(std::uint64_t(v));
}
template <class I>
I wrap_add(I a, I b) {
  return I(std::uint64_t(a) + std::uint64_t(b));
}
template <class I>
I wrap_mul(I a, I b) {
  return I(std::uint64_t(a) * std::uint64_t(b));
}
template <class I>
I floordiv(I a, I b) {
  if (b == 0) return 0;
  if (b == -1) return I(std::uint64_t(0) - std::uint64_t(a));
  const I q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? I(q - 1) : q;
}
template <class I>
I remainder(I a, I b) {
  if (b == 0 || b == -1) return 0;
  const I r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? I(r + b) : r;
}

}  // namespace

TEST_CASE("integer dtypes: names, sizes, host conversion saturating toward zero") {
  CHECK(kiln::parse_dtype("i32") == DType::i32);
  CHECK(kiln::parse_dtype("i64") == DType::i64);
  CHECK(kiln::size_of(DType::i64) == 8);
  CHECK_FALSE(kiln::is_float(DType::i32));
  CHECK(kiln::is_integer(DType::i64));
  CHECK_THROWS_WITH_AS(kiln::parse_dtype("int8"), doctest::Contains("i32, i64"), kiln::DtypeError);
  unsigned char b[8];
  const auto round_trip = [&](DType t, double v) {
    kiln::store_element(t, v, b);
    return kiln::load_element(t, b);
  };
  CHECK(round_trip(DType::i32, -2.7) == -2);
  CHECK(round_trip(DType::i32, 3e10) == 2147483647);
  CHECK(round_trip(DType::i32, -3e10) == -2147483648.0);
  CHECK(round_trip(DType::i32, NAN) == 0);
  CHECK(round_trip(DType::i64, 1e30) == 9223372036854775807.0);
  CHECK(round_trip(DType::i64, -123456789012.9) == -123456789012.0);
}

TEST_CASE("integer dtype rules: promotion, ops that take integers, no silent mix with floats") {
  CHECK(infer("add", {desc({4}, DType::i32), desc({4}, DType::i64)}).dtype == DType::i64);
  CHECK(infer("div", {desc({4}, DType::i32), 3.0}).dtype == DType::i32);
  CHECK(infer("remainder", {desc({4}, DType::i64), -7.0}).dtype == DType::i64);
  CHECK(infer("lt", {desc({4}, DType::i32), desc({4}, DType::i64)}).dtype == DType::boolean);
  CHECK(infer("where", {desc({4}, DType::f32), desc({4}, DType::i32), 1.0}).dtype == DType::i32);
  CHECK(infer("cast", {desc({4}, DType::f32)}, {{"dtype", std::string("i64")}}).dtype ==
        DType::i64);
  CHECK(infer("neg", {desc({4}, DType::i32)}).dtype == DType::i32);
  CHECK_THROWS_WITH_AS(infer("add", {desc({4}, DType::i32), desc({4}, DType::f32)}),
                       doctest::Contains("i32 and f32 do not mix; cast one of them first"),
                       kiln::DtypeError);
  CHECK_THROWS_WITH_AS(infer("lt", {desc({4}, DType::bf16), desc({4}, DType::i64)}),
                       doctest::Contains("do not mix"), kiln::DtypeError);
  CHECK_THROWS_WITH_AS(infer("exp", {desc({4}, DType::i32)}),
                       doctest::Contains("exp takes float operands, not i32"), kiln::DtypeError);
  CHECK_THROWS_WITH_AS(infer("softmax", {desc({4, 4}, DType::i64)}),
                       doctest::Contains("x is i64; cast it to a float dtype first"),
                       kiln::DtypeError);
  CHECK_THROWS_WITH_AS(infer("add", {desc({4}, DType::i32), 2.5}),
                       doctest::Contains("whole number"), kiln::ArgumentError);
  CHECK_THROWS_AS(infer("mul", {desc({4}, DType::i64), 1e9}), kiln::ArgumentError);
}

TEST_CASE("a body with an integer is typed: values in their compute types, casts by convert") {
  namespace cg = kiln::codegen;
  cg::Body b;
  b.inputs = {DType::i32, DType::f32};
  b.outputs = {DType::f32};
  b.scalars = 1;
  b.steps.push_back({"kiln::op::Add",
                     {{cg::Ref::Kind::input, 0}, {cg::Ref::Kind::scalar, 0}},
                     false,
                     DType::i64,
                     nullptr,
                     {DType::i64, DType::i64}});
  b.steps.push_back({"kiln::op::Identity", {{cg::Ref::Kind::step, 0}}, true, DType::f32});
  b.steps.push_back({"kiln::op::Mul",
                     {{cg::Ref::Kind::step, 1}, {cg::Ref::Kind::input, 1}},
                     false,
                     DType::f32,
                     nullptr,
                     {DType::f32, DType::f32}});
  b.results = {{cg::Ref::Kind::step, 2}};
  const std::string s = cg::render_body(b);
  CHECK(s.find("static constexpr bool typed = true;") != std::string::npos);
  CHECK(s.find("const long long t0 = kiln::op::Add::apply(static_cast<long long>(x.get<0>()), "
               "static_cast<long long>(s[0]));") != std::string::npos);
  CHECK(s.find("const float t1 = kiln::convert<float>(kiln::op::Identity::apply(t0));") !=
        std::string::npos);
  CHECK(s.find("const float t2 = kiln::op::Mul::apply(t1, x.get<1>());") != std::string::npos);
  CHECK(s.find("y.get<0>() = t2;") != std::string::npos);
  b.inputs = {DType::f32, DType::f32};  // no integer anywhere: the f32 body as before
  b.steps[0].dtype = DType::f32;
  CHECK(cg::render_body(b).find("apply(const float* x, const float* s, float* y)") !=
        std::string::npos);
}

TEST_CASE("gpu: i32 and i64 arithmetic wraps, divides by floor, takes the divisor's sign" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  constexpr std::int32_t lo = std::numeric_limits<std::int32_t>::min(),
                         hi = std::numeric_limits<std::int32_t>::max();
  std::vector<std::int32_t> a = {lo, hi, -7, 7, -7, 7, 0, -1, 1, lo, 5, -5, 123456, -99};
  std::vector<std::int32_t> b = {-1, 1, 2, -2, -2, 2, 5, lo, 0, 0, 3, 3, -1000, 7};
  auto rng = kiln::test::make_rng(47);
  std::uniform_int_distribution<std::int32_t> any(lo, hi), small(-50, 50);
  for (int i = 0; i < 1000; ++i) {  // odd length: 1014 elements, packs and a tail
    a.push_back(i % 3 ? any(rng) : small(rng));
    b.push_back(i % 2 ? any(rng) : small(rng));
  }
  const std::int64_t n = std::int64_t(a.size());
  Graph g;
  auto A = g.input("a", {n}, DType::i32), B = g.input("b", {n}, DType::i32);
  auto B64 = g.add("cast", {B}, {{"dtype", std::string("i64")}});
  g.output(g.add("add", {A, B}), "add");
  g.output(g.add("sub", {A, B}), "sub");
  g.output(g.add("mul", {A, B}), "mul");
  g.output(g.add("div", {A, B}), "div");
  g.output(g.add("remainder", {A, B}), "rem");
  g.output(g.add("neg", {A}), "neg");
  g.output(g.add("abs", {A}), "abs");
  g.output(g.add("maximum", {A, B}), "max");
  g.output(g.add("lt", {A, B}), "lt");
  g.output(g.add("mul", {A, B64}), "mul64");  // i32 x i64: i64, no wrap at 32 bits
  g.output(g.add("div", {g.add("add", {B64, 3.0}), -2.0}), "div64");
  const kiln::Tensor ta = e.from_host({n}, DType::i32, a.data()),
                     tb = e.from_host({n}, DType::i32, b.data());
  for (bool fuse : {true, false}) {
    CAPTURE(fuse);
    auto out = kiln::Plan(g, fuse).run(e, {{"a", ta.view()}, {"b", tb.view()}});
    const auto i32s = [&](const char* name) {
      const auto bytes = kiln::test::bytes_of(out.at(name));
      std::vector<std::int32_t> v(bytes.size() / 4);
      std::memcpy(v.data(), bytes.data(), bytes.size());
      return v;
    };
    const auto i64s = [&](const char* name) {
      const auto bytes = kiln::test::bytes_of(out.at(name));
      std::vector<std::int64_t> v(bytes.size() / 8);
      std::memcpy(v.data(), bytes.data(), bytes.size());
      return v;
    };
    const auto add = i32s("add"), sub = i32s("sub"), mul = i32s("mul"), div = i32s("div"),
               rem = i32s("rem"), neg = i32s("neg"), abs = i32s("abs"), max = i32s("max");
    const auto lt = kiln::test::bytes_of(out.at("lt"));
    const auto mul64 = i64s("mul64"), div64 = i64s("div64");
    for (std::size_t i = 0; i < a.size(); ++i) {
      CAPTURE(a[i]);
      CAPTURE(b[i]);
      CHECK(add[i] == wrap_add(a[i], b[i]));
      CHECK(sub[i] == wrap<std::int32_t>(std::int64_t(a[i]) - b[i]));
      CHECK(mul[i] == wrap_mul(a[i], b[i]));
      CHECK(div[i] == floordiv(a[i], b[i]));
      CHECK(rem[i] == remainder(a[i], b[i]));
      CHECK(neg[i] == wrap<std::int32_t>(-std::int64_t(a[i])));
      CHECK(abs[i] == wrap<std::int32_t>(std::llabs(std::int64_t(a[i]))));
      CHECK(max[i] == std::max(a[i], b[i]));
      CHECK(lt[i] == (a[i] < b[i] ? 1 : 0));
      CHECK(mul64[i] == std::int64_t(a[i]) * b[i]);
      CHECK(div64[i] == floordiv<std::int64_t>(std::int64_t(b[i]) + 3, -2));
    }
  }
}

TEST_CASE("gpu: casts between floats and integers truncate, saturate, wrap; where picks integers" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  const std::vector<float> x = {2.7f,     -2.7f,     0.5f,  -0.5f,       3e9f,  -3e9f,  NAN,
                                INFINITY, -INFINITY, 1e19f, 16777217.0f, -1.0f, 100.25f};
  const std::vector<std::int64_t> big = {(std::int64_t(1) << 40) + 5,
                                         -(std::int64_t(1) << 35) - 1,
                                         std::numeric_limits<std::int64_t>::min(),
                                         7,
                                         -8,
                                         (std::int64_t(1) << 31) + 3,
                                         -1,
                                         0,
                                         1,
                                         2,
                                         3,
                                         4,
                                         5};
  const std::int64_t n = std::int64_t(x.size());
  Graph g;
  auto X = g.input("x", {n}, DType::f32), I = g.input("i", {n}, DType::i64);
  auto cast = [&](kiln::Value v, const char* t) {
    return g.add("cast", {v}, {{"dtype", std::string(t)}});
  };
  g.output(cast(X, "i32"), "x32");
  g.output(cast(X, "i64"), "x64");
  g.output(cast(I, "i32"), "i32");
  g.output(cast(I, "f32"), "f32");
  g.output(cast(cast(I, "bf16"), "f32"), "bf16");
  g.output(g.add("where", {g.add("gt", {X, 0.0}), I, g.add("neg", {I})}), "pick");
  const kiln::Tensor tx = e.from_host({n}, DType::f32, x.data()),
                     ti = e.from_host({n}, DType::i64, big.data());
  auto out = kiln::Plan(g).run(e, {{"x", tx.view()}, {"i", ti.view()}});
  const auto get = [&](const char* name, DType t, std::size_t i) {
    return kiln::load_element(t, kiln::test::bytes_of(out.at(name)).data() + i * kiln::size_of(t));
  };
  std::vector<std::int64_t> x64(x.size());
  std::memcpy(x64.data(), kiln::test::bytes_of(out.at("x64")).data(), 8 * x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    CAPTURE(x[i]);
    CAPTURE(big[i]);
    const double t = std::isnan(x[i]) ? 0.0 : std::trunc(double(x[i]));
    CHECK(get("x32", DType::i32, i) == std::clamp(t, -2147483648.0, 2147483647.0));
    const std::int64_t want64 =
        std::isnan(x[i])              ? 0
        : t >= 9223372036854775807.0  ? std::numeric_limits<std::int64_t>::max()
        : t <= -9223372036854775808.0 ? std::numeric_limits<std::int64_t>::min()
                                      : std::int64_t(t);
    CHECK(x64[i] == want64);
    CHECK(get("i32", DType::i32, i) == double(wrap<std::int32_t>(big[i])));
    CHECK(get("f32", DType::f32, i) == double(float(big[i])));
    unsigned char bf[2];
    kiln::store_element(DType::bf16, double(float(big[i])), bf);
    CHECK(get("bf16", DType::f32, i) == kiln::load_element(DType::bf16, bf));
    const std::int64_t pick = x[i] > 0 ? big[i] : wrap<std::int64_t>(0 - std::uint64_t(big[i]));
    CHECK(get("pick", DType::i64, i) == double(pick));
  }
}

TEST_CASE("gpu: integer operands transposed, strided and broadcast, fused and not" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(471);
  std::uniform_int_distribution<std::int64_t> any(-(std::int64_t(1) << 40), std::int64_t(1) << 40);
  const std::int64_t R = 37, C = 65;
  std::vector<std::int64_t> t(std::size_t(R * C));    // held transposed: element (r, c) at c R + r
  std::vector<std::int32_t> row(std::size_t(2 * C));  // every other element read: stride 2
  for (auto& v : t) v = any(rng);
  for (auto& v : row) v = std::int32_t(any(rng) % 1000);
  Graph g;
  auto A = g.input("a", {R, C}, DType::i64), B = g.input("b", {C}, DType::i32);
  auto s = g.add("sub", {g.add("mul", {A, 3.0}), B});  // [R, C] - [C]: broadcast
  g.output(g.add("remainder", {s, g.add("add", {B, 1000.0})}), "rem");
  g.output(g.add("cast", {g.add("ge", {A, B})}, {{"dtype", std::string("i32")}}), "ge");
  const kiln::Tensor ta = e.from_host({C, R}, DType::i64, t.data()),
                     tb = e.from_host({2 * C}, DType::i32, row.data());
  kiln::TensorView va = ta.view(), vb = tb.view();
  va.shape = {R, C};
  va.strides = {1, R};
  vb.shape = {C};
  vb.strides = {2};
  for (bool fuse : {true, false}) {
    CAPTURE(fuse);
    auto out = kiln::Plan(g, fuse).run(e, {{"a", va}, {"b", vb}});
    const auto rem = kiln::test::bytes_of(out.at("rem")), ge = kiln::test::bytes_of(out.at("ge"));
    for (std::int64_t r = 0; r < R; ++r)
      for (std::int64_t c = 0; c < C; ++c) {
        const std::int64_t a = t[std::size_t(c * R + r)], b = row[std::size_t(2 * c)];
        std::int64_t got_rem;
        std::int32_t got_ge;
        std::memcpy(&got_rem, rem.data() + 8 * (r * C + c), 8);
        std::memcpy(&got_ge, ge.data() + 4 * (r * C + c), 4);
        CHECK(got_rem == remainder<std::int64_t>(3 * a - b, b + 1000));
        CHECK(got_ge == (a >= b ? 1 : 0));
      }
  }
}
