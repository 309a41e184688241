// attention on the GPU against the tests' fp64 reference (tests/engine/reference_attention.cpp):
// lengths 1 to 4097 with Sq != Skv, grouped and multi-query heads (packed in the decode path's
// tiles), keys split between warps and blocks, D 40 to 256, causal in both alignments, additive
// and bool masks, per-batch KV lengths, fully masked rows, q/k/v read in place from a packed
// [B, S, 3, H, D] projection, f16, bf16 and f32; outputs poisoned first.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <kiln/ops.hpp>
#include <limits>
#include <map>

#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Shape;

namespace {

// Host values of a buffer and device copy; views into it gathered back to row-major values.
struct Buffer {
  std::vector<double> host;
  kiln::Tensor memory;
  DType t = DType::f32;

  kiln::TensorView view(Shape shape, Shape strides, std::int64_t offset) const {
    kiln::TensorView v = memory.view();
    v.data += std::uint64_t(offset) * kiln::size_of(t);
    v.shape = std::move(shape);
    v.strides = std::move(strides);
    v.capacity = 0;
    return v;
  }
  std::vector<double> values(const kiln::TensorView& v) const {
    const std::int64_t n = kiln::numel_of(v.shape);
    const std::int64_t offset = std::int64_t(v.data - memory.view().data) / kiln::size_of(t);
    std::vector<double> out(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t at = offset, rest = i;
      for (std::size_t d = v.shape.size(); d-- > 0;) {
        at += rest % v.shape[d] * v.strides[d];
        rest /= v.shape[d];
      }
      out[std::size_t(i)] = host[std::size_t(at)];
    }
    return out;
  }
};

// `values` (already what `t` holds) into device memory.
Buffer upload(kiln::Engine& e, DType t, std::vector<double> values) {
  Buffer b;
  b.t = t;
  std::vector<unsigned char> bytes(values.size() * kiln::size_of(t));
  for (std::size_t i = 0; i < values.size(); ++i) {
    kiln::store_element(t, values[i], bytes.data() + i * kiln::size_of(t));
    values[i] = kiln::load_element(t, bytes.data() + i * kiln::size_of(t));
  }
  b.host = std::move(values);
  b.memory = e.from_host({std::int64_t(b.host.size())}, t, bytes.data());
  return b;
}

Buffer random_buffer(kiln::Engine& e, DType t, std::int64_t n, double lo, double hi,
                     std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = u(rng);
  return upload(e, t, std::move(v));
}

Shape contiguous(const Shape& s) { return kiln::contiguous_strides(s); }

struct Case {
  DType t;
  std::int64_t b, hq, hkv, sq, skv, d;
  bool causal = false, bottom_right = false;
  // 0 none, 1 additive [Sq, Skv] (with a row of -inf), 2 bool [B, 1, Sq, Skv] (with a row all
  // false), 3 additive per head [1, Hq, Sq, Skv]
  int mask = 0;
  bool lens = false;
  bool packed = false;  // q, k, v views of one [B, S, 3, H, D] tensor
};

std::string name_of(const Case& c) {
  return fmt::format("{} B{} H{}/{} Sq{} Skv{} D{}{}{}{}{}{}", kiln::name_of(c.t), c.b, c.hq, c.hkv,
                     c.sq, c.skv, c.d, c.causal ? (c.bottom_right ? " causal_br" : " causal") : "",
                     c.mask == 1   ? " mask"
                     : c.mask == 2 ? " boolmask"
                     : c.mask == 3 ? " headmask"
                                   : "",
                     c.lens ? " lens" : "", c.packed ? " packed" : "", "");
}

// The call of run_case as a plan that also writes the rows' lse (attention_lse joins the
// attention kernel): one kernel, the result byte for byte the eager call's (`eager`), the lse
// against fp64 (-inf where a row sees no key).
void check_with_lse(kiln::Engine& e, const Case& c, const std::vector<kiln::Operand>& args,
                    const kiln::Attrs& attrs, const kiln::test::AttentionRef& ref,
                    const std::vector<unsigned char>& eager) {
  kiln::Graph g;
  std::vector<kiln::GraphArg> in;
  std::map<std::string, kiln::TensorView> inputs;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& v = std::get<kiln::TensorView>(args[i]);
    in.push_back(g.input(fmt::format("x{}", i), v.shape, v.dtype));
    inputs[fmt::format("x{}", i)] = v;
  }
  g.output(g.add("attention", in, attrs), "out");
  g.output(g.add("attention_lse", in, attrs), "lse");
  const kiln::Plan plan(g);
  CHECK(plan.kernels().size() == 1);
  const Shape qs = {c.b, c.hq, c.sq, c.d}, ls = {c.b, c.hq, c.sq};
  std::vector<unsigned char> poison(eager.size(), 0xff);
  kiln::Tensor out = e.from_host(qs, c.t, poison.data());
  std::vector<unsigned char> lse_poison(std::size_t(kiln::numel_of(ls)) * 4, 0xff);
  kiln::Tensor lse = e.from_host(ls, DType::f32, lse_poison.data());
  plan.run(e, inputs, {{"out", out.view()}, {"lse", lse.view()}});
  CHECK(kiln::test::bytes_of(out) == eager);
  const std::vector<unsigned char> got = kiln::test::bytes_of(lse);
  int bad = 0;
  const std::int64_t rows = kiln::numel_of(ls), step = rows > 4000 ? 7 : 1;  // as run_case's
  for (std::int64_t r = 0; r < rows; r += step) {
    double bound = 0;
    const double want =
        kiln::test::attention_lse_row(ref, r / c.sq / c.hq, r / c.sq % c.hq, r % c.sq, &bound);
    const double have = kiln::load_element(DType::f32, got.data() + 4 * r);
    // f32 scores (their error scales with `bound`) and an approximate exp2 on some paths.
    const double tol = 2e-5 * (1 + bound + std::fabs(want));
    const bool ok = std::isinf(want) ? have == want : std::fabs(have - want) <= tol;
    if (!ok && bad++ < 5) FAIL_CHECK(fmt::format("lse row {}: got {} want {}", r, have, want));
  }
  CHECK(bad == 0);
}

void run_case(kiln::Engine& e, const Case& c, std::mt19937_64& rng) {
  CAPTURE(name_of(c));
  const Shape qs = {c.b, c.hq, c.sq, c.d}, ks = {c.b, c.hkv, c.skv, c.d};
  std::vector<Buffer> keep;
  std::vector<kiln::Operand> args;
  kiln::test::AttentionRef ref;
  std::vector<std::vector<double>> vals;
  vals.reserve(5);
  if (c.packed) {
    const std::int64_t row = 3 * c.hq * c.d;
    keep.push_back(random_buffer(e, c.t, c.b * c.sq * row, -2, 2, rng));
    const Shape st = {c.sq * row, c.d, row, 1};
    for (int i = 0; i < 3; ++i) args.push_back(keep[0].view(qs, st, i * c.hq * c.d));
  } else {
    for (const Shape* s : {&qs, &ks, &ks}) {
      keep.push_back(random_buffer(e, c.t, kiln::numel_of(*s), -2, 2, rng));
      args.push_back(keep.back().view(*s, contiguous(*s), 0));
    }
  }
  for (int i = 0; i < 3; ++i)
    vals.push_back(keep[c.packed ? 0 : std::size_t(i)].values(
        std::get<kiln::TensorView>(args[std::size_t(i)])));
  if (c.mask) {
    const Shape ms = c.mask == 1   ? Shape{c.sq, c.skv}
                     : c.mask == 2 ? Shape{c.b, 1, c.sq, c.skv}
                                   : Shape{1, c.hq, c.sq, c.skv};
    const bool additive = c.mask != 2;
    std::vector<double> m(std::size_t(kiln::numel_of(ms)));
    std::uniform_real_distribution<double> u(-2, 2);
    for (double& x : m) x = additive ? u(rng) : double(u(rng) > -1.2);
    const std::int64_t dead = std::min<std::int64_t>(3, c.sq - 1);  // a row with no key
    for (std::int64_t j = 0; j < c.skv; ++j)
      m[std::size_t(dead * c.skv + j)] = additive ? -std::numeric_limits<double>::infinity() : 0;
    const DType mt = c.mask == 2 ? DType::boolean : c.t;
    keep.push_back(upload(e, mt, std::move(m)));
    args.push_back(keep.back().view(ms, contiguous(ms), 0));
    vals.push_back(keep.back().host);
    ref.mask = &vals.back();
    ref.mask_shape = ms;
    ref.mask_bool = c.mask == 2;
  }
  if (c.lens) {
    std::vector<double> n(static_cast<std::size_t>(c.b));
    for (std::int64_t i = 0; i < c.b; ++i)
      n[std::size_t(i)] = double((c.skv * (i + 1)) / (c.b + 1));
    n[0] = 0;  // a batch without keys
    // A cache's unused rows: NaN in k and v past each batch's length, which no path may let
    // through (a probability of 0 times NaN is NaN).
    for (std::size_t i = 1; i < 3 && !c.packed; ++i) {
      std::vector<double> poisoned = vals[i];
      for (std::int64_t r = 0; r < c.b * c.hkv * c.skv; ++r)
        if (r % c.skv >= std::int64_t(n[std::size_t(r / c.skv / c.hkv)]))
          std::fill_n(poisoned.begin() + r * c.d, c.d, std::numeric_limits<double>::quiet_NaN());
      keep.push_back(upload(e, c.t, std::move(poisoned)));
      args[i] = keep.back().view(ks, contiguous(ks), 0);
    }
    keep.push_back(upload(e, DType::i64, std::move(n)));
    args.push_back(keep.back().view({c.b}, {1}, 0));
    vals.push_back(keep.back().host);
    ref.lens = &vals.back();
  }
  ref.q_shape = qs, ref.kv_shape = ks;
  ref.q = &vals[0], ref.k = &vals[1], ref.v = &vals[2];
  ref.causal = c.causal, ref.bottom_right = c.bottom_right;
  kiln::Attrs attrs;
  attrs.set("causal", c.causal).set("causal_align", c.bottom_right ? "bottom_right" : "top_left");

  // The output, poisoned with NaN first.
  std::vector<unsigned char> poison(std::size_t(kiln::numel_of(qs)) * kiln::size_of(c.t), 0xff);
  kiln::Tensor out = e.from_host(qs, c.t, poison.data());
  kiln::call_into(e, "attention", out.view(), args, attrs);
  const std::vector<unsigned char> got = kiln::test::bytes_of(out);
  const double tol = c.t == DType::bf16 ? 2e-2 : c.t == DType::f16 ? 4e-3 : 1e-4;
  const std::int64_t rows = c.b * c.hq * c.sq;
  const std::int64_t step = rows > 4000 ? 7 : 1;  // the fp64 reference of the large cases: a sample
  int bad = 0;
  double worst = 0;
  for (std::int64_t r = 0; r < rows; r += step) {
    const std::vector<double> want =
        kiln::test::attention_row(ref, r / c.sq / c.hq, r / c.sq % c.hq, r % c.sq);
    for (std::int64_t x = 0; x < c.d; ++x) {
      const double v =
          kiln::load_element(c.t, got.data() + std::size_t(r * c.d + x) * kiln::size_of(c.t));
      const double w = want[std::size_t(x)], err = std::fabs(v - w);
      worst = std::isnan(v) ? INFINITY : std::max(worst, err);
      if (!(err <= tol * (1 + std::fabs(w))) && bad++ < 5)
        FAIL_CHECK(fmt::format("row {} col {}: got {} want {}", r, x, v, w));
    }
  }
  MESSAGE(fmt::format("{}: largest error {:.3g}", name_of(c), worst));
  CHECK(bad == 0);
  if (c.causal) {  // the call again, on its prepared launch: the sm_90a path draws causal items
                   // from a counter in the launch's workspace, which must be back at zero
    kiln::Tensor again = e.from_host(qs, c.t, poison.data());
    kiln::call_into(e, "attention", again.view(), args, attrs);
    CHECK(kiln::test::bytes_of(again) == got);
  }
  check_with_lse(e, c, args, attrs, ref, got);
}

}  // namespace

TEST_CASE("gpu: attention against fp64 over lengths, heads, head sizes, masks and layouts" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  std::mt19937_64 rng = kiln::test::make_rng(49);
  const std::vector<Case> cases = {
      {DType::bf16, 2, 4, 4, 129, 129, 64},
      {DType::bf16, 1, 8, 1, 64, 1000, 128, true},
      {DType::f16, 2, 8, 2, 1000, 129, 80, true, true},
      {DType::bf16, 3, 4, 1, 7, 1000, 40, true, true, 0, true},
      {DType::f16, 2, 4, 4, 129, 64, 160, false, false, 1},
      {DType::bf16, 2, 4, 2, 1, 1000, 256, false, false, 2, true},
      {DType::bf16, 2, 4, 4, 129, 129, 64, true, false, 0, false, true},
      {DType::f16, 1, 2, 2, 1000, 1000, 128, false, false, 0, false, true},
      {DType::f32, 2, 4, 2, 129, 64, 64, true, false, 1},
      {DType::f32, 1, 4, 4, 7, 1, 40},
      {DType::f32, 2, 2, 2, 64, 64, 80, true, true, 0, false, true},
      {DType::bf16, 1, 1, 1, 1, 1, 64},
      {DType::bf16, 1, 2, 2, 1000, 1000, 256, true},
      {DType::f16, 2, 8, 8, 1000, 7, 64},
      {DType::bf16, 2, 8, 8, 1000, 1000, 128},
      {DType::f16, 1, 4, 2, 129, 1000, 64, true, true, 2, true},
      {DType::bf16, 1, 2, 1, 4097, 4097, 64, true},
      // More blocks of 128 rows than an H100 has multiprocessors: the sm_90a path's persistent
      // blocks take several each (with kv_lens; bottom-right causal over fewer keys than rows:
      // blocks whose rows see no key).
      {DType::bf16, 8, 16, 4, 600, 700, 128, true, true, 0, true},
      {DType::bf16, 8, 16, 4, 600, 300, 128, true, true},
      // kv_lens on the sm_90a path without a causal diagonal: lengths that end inside a tile.
      {DType::f16, 3, 4, 2, 300, 1000, 80, false, false, 0, true},
      {DType::bf16, 3, 4, 4, 129, 333, 128, true, false, 0, true},
      // The same at D 192 (one Q tile a block): items without keys hand the next item on.
      {DType::bf16, 2, 4, 2, 900, 300, 192, true, true},
      {DType::f16, 4, 16, 16, 1000, 1000, 64},
  };
  for (const Case& c : cases) run_case(e, c, rng);
}

TEST_CASE(
    "gpu: attention's decode path (16 query rows or fewer) against fp64: grouped heads "
    "packed, keys split between warps, the blocks of a cluster and chunks" *
    doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  std::mt19937_64 rng = kiln::test::make_rng(51);
  const std::vector<Case> cases = {
      {DType::bf16, 2, 32, 8, 1, 4097, 128},
      {DType::bf16, 1, 8, 1, 1, 4097, 128},
      {DType::f16, 1, 8, 1, 16, 1000, 64, true, true, 1},
      {DType::bf16, 3, 4, 4, 5, 129, 80, true},
      {DType::bf16, 2, 16, 2, 2, 4097, 160, false, false, 0, true},
      {DType::bf16, 2, 8, 2, 4, 1000, 128, false, false, 2},
      {DType::f16, 2, 4, 4, 9, 9, 64, true, false, 0, false, true},
      {DType::bf16, 2, 4, 1, 3, 64, 256, true, true, 0, true},
      {DType::bf16, 2, 8, 2, 3, 500, 64, false, false, 3, true},
      {DType::f16, 1, 6, 3, 7, 1, 40},
      // Few tiles of rows over many keys: clusters of 8, then chunks merged through the
      // workspace (on an H100's 132 multiprocessors).
      {DType::bf16, 1, 8, 1, 1, 16384, 128},
      {DType::f16, 1, 4, 2, 3, 20000, 64, true, true, 0, true},
      {DType::bf16, 1, 16, 2, 1, 30000, 80, false, false, 1},
  };
  for (const Case& c : cases) run_case(e, c, rng);
}

TEST_CASE("gpu: attention reuses its kernel for a new length" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  std::mt19937_64 rng = kiln::test::make_rng(50);
  run_case(e, {DType::bf16, 1, 2, 2, 100, 300, 64, true}, rng);
  const std::size_t compiled = e.kernels().size();
  run_case(e, {DType::bf16, 2, 4, 4, 77, 1000, 64, true}, rng);
  CHECK(e.kernels().size() == compiled);
}
