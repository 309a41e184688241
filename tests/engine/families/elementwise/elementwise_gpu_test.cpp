// Every op x dtype x layout on the GPU against the fp64 CPU reference, outputs poisoned first.
#include <fmt/format.h>

#include <cmath>

#include "ops/op.hpp"
#include "tests/engine/cases.hpp"
#include "tests/support.hpp"

namespace {

using kiln::DType;

struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance(DType t) {
  switch (t) {
    case DType::f32:
      return {1e-5, 1e-6};
    case DType::f16:
      return {1e-3, 1e-5};
    case DType::bf16:
      return {8e-3, 1e-5};
    case DType::boolean:
      return {0, 0};
  }
  return {0, 0};
}

struct HostOperand {
  kiln::test::OperandSpec spec;
  std::vector<unsigned char> bytes;  // the whole allocation
  kiln::Tensor memory;
};

// Value of operand `o` at the result's multi-index `idx` (broadcasting from the right).
double value_at(const HostOperand& o, const kiln::Shape& out_shape,
                const std::vector<std::int64_t>& idx) {
  if (o.spec.scalar) return o.spec.value;
  const auto& v = o.spec.view;
  const kiln::Shape st = v.resolved_strides();
  std::int64_t off = o.spec.offset;
  const std::size_t lead = out_shape.size() - v.shape.size();
  for (std::size_t d = 0; d < v.shape.size(); ++d)
    if (v.shape[d] != 1) off += idx[lead + d] * st[d];
  return kiln::load_element(v.dtype, o.bytes.data() + off * kiln::size_of(v.dtype));
}

// Runs one case; returns mismatches as text (at most a few).
std::vector<std::string> run_case(kiln::Engine& e, const kiln::test::Case& c,
                                  std::mt19937_64& rng) {
  std::vector<HostOperand> ops;
  std::vector<kiln::Operand> args;
  for (auto& s : c.operands) {
    HostOperand h{s, {}, {}};
    if (!s.scalar) {
      h.bytes =
          kiln::test::random_bytes(s.view.dtype, std::size_t(s.alloc), c.lo, c.hi, rng, c.step);
      h.memory = e.from_host({s.alloc}, s.view.dtype, h.bytes.data());
      h.spec.view.data =
          h.memory.view().data + std::uint64_t(s.offset) * kiln::size_of(s.view.dtype);
    }
    ops.push_back(std::move(h));
  }
  for (auto& h : ops)
    args.push_back(h.spec.scalar ? kiln::Operand(h.spec.value) : kiln::Operand(h.spec.view));
  const kiln::TensorView r = kiln::infer(c.op, args, c.attrs);
  kiln::Tensor out = e.empty(r.shape, r.dtype);
  out.fill_bytes(0xff);  // NaN in every float dtype, an impossible byte for bool
  kiln::call_into(e, c.op, out, args, c.attrs);
  std::vector<unsigned char> got(out.bytes());
  out.copy_to_host(got.data());

  const auto& def = kiln::ops::find_op(c.op);
  const Tolerance tol = tolerance(r.dtype);
  std::vector<std::string> bad;
  std::vector<std::int64_t> idx(r.shape.size(), 0);
  const std::int64_t n = r.numel();
  for (std::int64_t i = 0; i < n && bad.size() < 3; ++i) {
    std::int64_t rest = i;
    for (std::size_t d = r.shape.size(); d-- > 0;) {
      idx[d] = rest % r.shape[d];
      rest /= r.shape[d];
    }
    double in[3] = {0, 0, 0};
    for (std::size_t k = 0; k < ops.size(); ++k) in[k] = value_at(ops[k], r.shape, idx);
    if (c.op == "clamp") {
      in[1] = c.attrs.number("min").value_or(-INFINITY);
      in[2] = c.attrs.number("max").value_or(INFINITY);
    }
    const double want = def.reference(in[0], in[1], in[2]);
    const unsigned char* raw = got.data() + i * kiln::size_of(r.dtype);
    const double have = kiln::load_element(r.dtype, raw);
    bool ok;
    if (r.dtype == DType::boolean)
      ok = (*raw == 0 || *raw == 1) && have == (want != 0 ? 1.0 : 0.0);
    else if (std::isnan(want) || std::isnan(have))
      ok = std::isnan(want) && std::isnan(have);
    else if (std::isinf(want) || std::isinf(have))
      ok = want == have;
    else
      ok = std::fabs(have - want) <= tol.atol + tol.rtol * std::fabs(want);
    if (!ok)
      bad.push_back(fmt::format("{} at {}: got {} want {} (inputs {}, {}, {})", c.label, i, have,
                                want, in[0], in[1], in[2]));
  }
  return bad;
}

std::vector<std::pair<std::int64_t, std::int64_t>> shapes_for(std::mt19937_64& rng) {
  static const std::pair<std::int64_t, std::int64_t> edges[] = {
      {1, 1}, {1, 7}, {3, 1}, {5, 3}, {2, 9}};
  std::uniform_int_distribution<int> edge(0, 4), rows(1, 300), cols(1, 3000);
  return {edges[edge(rng)], {rows(rng), cols(rng)}};
}

}  // namespace

TEST_CASE("gpu: every op x dtype x layout matches the fp64 reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::test::TempDir tmp;
  kiln::EngineOptions o;
  o.cache_dir = tmp.path();
  kiln::Engine e(o);
  auto rng = kiln::test::make_rng(1);
  int cases = 0;
  for (auto [R, C] : shapes_for(rng)) {
    // Each shape draws its own sweep; the second shape is random per run of the seed.
    for (auto& c : kiln::test::sweep(R, C, true)) {
      CAPTURE(c.label);
      for (auto& f : run_case(e, c, rng)) FAIL_CHECK(f);
      ++cases;
    }
  }
  MESSAGE(fmt::format("{} cases, {} kernels compiled on {} ({})", cases, e.counters().compiles,
                      e.device_name(), e.arch()));
  CHECK(cases > 800);
}

TEST_CASE("gpu: vectorized and scalar paths agree on large odd shapes" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(2);
  for (std::int64_t n : {std::int64_t(1) << 22, (std::int64_t(1) << 22) + 3}) {
    for (DType t : kiln::kFloatDTypes) {
      kiln::test::Case c;
      c.op = "silu";
      c.operands.resize(1);
      c.operands[0].view.shape = {n};
      c.operands[0].view.dtype = t;
      c.operands[0].alloc = n;
      c.label = fmt::format("silu {} [{}]", kiln::name_of(t), n);
      CAPTURE(c.label);
      for (auto& f : run_case(e, c, rng)) FAIL_CHECK(f);
    }
  }
}

TEST_CASE("gpu: a tensor of 2^31 + 8 elements takes the 64-bit index path" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  const std::int64_t n = (std::int64_t(1) << 31) + 8;
  std::vector<std::uint16_t> host(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    host[std::size_t(i)] = std::uint16_t(0x3f80 + (i % 97));  // bf16 1.0 .. ~1.75
  kiln::Tensor x = e.from_host({n}, DType::bf16, host.data());
  kiln::Tensor y = e.empty({n}, DType::bf16);
  y.fill_bytes(0xff);
  kiln::call_into(e, "neg", y, {x});
  CHECK(e.kernels().back().name == "neg_bf16__r1v8_i64");
  y.copy_to_host(host.data());
  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < n; ++i)
    wrong += host[std::size_t(i)] != std::uint16_t(0xbf80 + (i % 97));
  CHECK(wrong == 0);
}

TEST_CASE("gpu: ops compile on first use and reuse after; op shorthands work" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::test::TempDir tmp;
  kiln::EngineOptions o;
  o.cache_dir = tmp.path();
  kiln::Engine e(o);
  std::vector<float> a(1000), b(1000), c(1000);
  for (int i = 0; i < 1000; ++i) {
    a[i] = 0.01f * i - 3;
    b[i] = 1.5f - 0.002f * i;
    c[i] = 0.5f;
  }
  auto A = e.from_host({1000}, DType::f32, a.data()), B = e.from_host({1000}, DType::f32, b.data()),
       C = e.from_host({1000}, DType::f32, c.data());
  for (int rep = 0; rep < 3; ++rep) {
    kiln::Tensor y = kiln::silu(e, kiln::add(e, kiln::mul(e, A, B), C));
    std::vector<float> out(1000);
    y.copy_to_host(out.data());
    for (int i = 0; i < 1000; ++i) {
      const double t = double(a[i]) * b[i] + c[i];
      CHECK(out[i] == doctest::Approx(t / (1 + std::exp(-t))).epsilon(1e-5));
    }
  }
  CHECK(e.counters().compiles == 3);
  CHECK(e.counters().memory_hits == 6);
  kiln::Engine second(o);  // like a second process on the same cache
  kiln::Tensor y = kiln::silu(second, kiln::add(second, kiln::mul(second, A, B), C));
  CHECK(second.counters().compiles == 0);
  CHECK(second.counters().disk_hits == 3);
}

TEST_CASE("gpu: launch-time errors are typed" * doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  kiln::Tensor x = e.empty({8}, DType::f32);
  kiln::TensorView null_view = x.view();
  null_view.data = 0;
  CHECK_THROWS_WITH_AS(kiln::neg(e, null_view), doctest::Contains("null data pointer"),
                       kiln::ArgumentError);
  kiln::Tensor wrong = e.empty({4}, DType::f32);
  CHECK_THROWS_AS(kiln::call_into(e, "neg", wrong, {x}), kiln::ShapeError);
  kiln::Tensor wrong_dtype = e.empty({8}, DType::f16);
  CHECK_THROWS_AS(kiln::call_into(e, "neg", wrong_dtype, {x}), kiln::DtypeError);
  CHECK_THROWS_AS(e.empty({-1}, DType::f32), kiln::ShapeError);
  kiln::EngineOptions o;
  o.device = 99;
  CHECK_THROWS_WITH_AS(kiln::Engine{o}, doctest::Contains("device 99"), kiln::CudaError);
}

TEST_CASE("gpu: an eager op seen before takes this call's buffers, scalars and bounds" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  std::vector<float> a(777);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.01f * float(i) - 3;
  std::vector<kiln::Tensor> xs = {e.from_host({777}, DType::f32, a.data()),
                                  e.from_host({777}, DType::f32, a.data())};
  std::vector<kiln::Tensor> ys = {e.empty({777}, DType::f32), e.empty({777}, DType::f32)};
  auto fetched = [](const kiln::Tensor& t) {
    std::vector<float> v(std::size_t(t.numel()));
    t.copy_to_host(v.data());
    return v;
  };
  int round = 0;
  for (double s :
       {1.0, -2.5, 7.25, 0.0}) {  // one signature: only the scalar and the buffers change
    const std::size_t in = std::size_t(round % 2), out = std::size_t((round / 2) % 2);
    ys[out].fill_bytes(0xff);
    kiln::call_into(e, "add", ys[out], {xs[in], s});
    const auto y = fetched(ys[out]);
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(y[i] == float(a[i] + s));
    ++round;
  }
  for (auto [lo, hi] : std::vector<std::pair<std::optional<double>, std::optional<double>>>{
           {-1, 1}, {0, 0.5}, {std::nullopt, 0}}) {
    const auto y = fetched(kiln::clamp(e, xs[0], lo, hi));
    for (std::size_t i = 0; i < a.size(); ++i)
      CHECK(y[i] ==
            float(std::min(std::max(double(a[i]), lo.value_or(-INFINITY)), hi.value_or(INFINITY))));
  }
  CHECK(e.counters().compiles == 2);  // add, clamp: each once
  // What the signature does not pin is still checked on a hit: clamp's bounds, an eps given.
  const kiln::Attrs crossed{{"min", 2.0}, {"max", 1.0}};
  CHECK_THROWS_AS(kiln::call_into(e, "clamp", ys[0], {xs[0]}, crossed), kiln::ArgumentError);
  kiln::Tensor rows = e.empty({7, 111}, DType::f32), normed = e.empty({7, 111}, DType::f32);
  kiln::call_into(e, "rms_norm", normed, {rows});
  CHECK_THROWS_AS(kiln::call_into(e, "rms_norm", normed, {rows}, {{"eps", -1.0}}),
                  kiln::ArgumentError);
}
