// The GEMM family on the GPU against fp64: every dtype, odd and edge shapes (M = 1, N = 7,
// K = 4095 and K = 0), batched with broadcast, transposed and misaligned views, and every
// epilogue pattern fused against the unfused plan; outputs poisoned first.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <kiln/graph.hpp>
#include <kiln/ops.hpp>
#include <map>

#include "cache/tuning.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/tune/tuner.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;
using kiln::Shape;

namespace {

// A matrix placed in device memory at `strides` (elements) from `offset` elements into a
// buffer of random bytes: its logical values (row-major, rounded to the dtype) and its view.
struct Placed {
  std::vector<double> values;
  kiln::Tensor memory;
  kiln::TensorView view;
};

Placed place(kiln::Engine& e, Shape shape, Shape strides, std::int64_t offset, DType t,
             std::mt19937_64& rng) {
  Placed p;
  const std::int64_t n = kiln::numel_of(shape);
  std::int64_t reach = offset;
  for (std::size_t d = 0; d < shape.size(); ++d) reach += (shape[d] - 1) * strides[d];
  std::vector<unsigned char> bytes =
      kiln::test::random_bytes(t, std::size_t(reach + 1), -1, 1, rng);
  p.values.resize(std::size_t(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t at = offset, rest = i;
    for (std::size_t d = shape.size(); d-- > 0;) {
      at += rest % shape[d] * strides[d];
      rest /= shape[d];
    }
    p.values[std::size_t(i)] = kiln::load_element(t, bytes.data() + at * kiln::size_of(t));
  }
  p.memory = e.from_host({reach + 1}, t, bytes.data());
  p.view = p.memory.view();
  p.view.data += std::uint64_t(offset) * kiln::size_of(t);
  p.view.shape = std::move(shape);
  p.view.strides = std::move(strides);
  p.view.capacity = 0;
  return p;
}

// Checks C = A (M x K) * B (K x N), batch 1, against fp64: per element within `out_tol` of
// |ref| plus `acc_tol` of the sum of the products' magnitudes; every `step`-th row and column.
// Returns the largest |error| found, over the mean |ref| of the elements checked.
double check_product(const kiln::Tensor& c, const Placed& a, const Placed& b, std::int64_t M,
                     std::int64_t N, std::int64_t K, double out_tol, double acc_tol,
                     std::int64_t step = 1) {
  const std::vector<unsigned char> got = kiln::test::bytes_of(c);
  const std::size_t es = kiln::size_of(c.dtype());
  int bad = 0;
  double worst = 0, total = 0, count = 0;
  for (std::int64_t m = 0; m < M; m += step)
    for (std::int64_t n = 0; n < N; n += step) {
      double ref = 0, mag = 0;
      for (std::int64_t k = 0; k < K; ++k) {
        const double p = a.values[std::size_t(m * K + k)] * b.values[std::size_t(k * N + n)];
        ref += p, mag += std::fabs(p);
      }
      const double v = kiln::load_element(c.dtype(), got.data() + std::size_t(m * N + n) * es);
      worst = std::max(worst, std::fabs(v - ref)), total += std::fabs(ref), ++count;
      if (!(std::fabs(v - ref) <= out_tol * std::fabs(ref) + acc_tol * mag + 1e-30) && bad++ < 5)
        FAIL_CHECK(
            fmt::format("C[{}, {}] = {} against {} (sum of |products| {})", m, n, v, ref, mag));
    }
  CHECK(bad == 0);
  return count && total ? worst / (total / count) : worst;
}

double out_tol(DType t) { return t == DType::bf16 ? 0x1p-8 : t == DType::f16 ? 0x1p-11 : 0; }

}  // namespace

TEST_CASE("gpu: matmul of every dtype on odd, edge, transposed and misaligned views" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(61);
  struct Shape3 {
    std::int64_t m, n, k;
  };
  // On sm_90a, contiguous f16/bf16 views with aligned rows take the wgmma path (f32: with b
  // contiguous along K); up to 8 rows
  // (f32: 32, in tiles of 8) the skinny one, its tiles 8 to 64 columns wide (N = 20000: 64;
  // 5000: 16); the others mma.sync (split along K in a cluster when the tiles are few).
  const std::vector<Shape3> shapes = {
      {1, 7, 4095},    {128, 128, 128}, {33, 65, 100},   {256, 192, 64}, {1, 1, 1},
      {200, 300, 17},  {300, 264, 200}, {64, 512, 1024}, {5, 300, 2048}, {8, 64, 512},
      {16, 256, 4096}, {30, 20, 300},   {1, 5000, 96},   {2, 20000, 40}};
  for (DType t : kiln::kFloatDTypes)
    for (bool tf32 : {false, true}) {
      if (tf32 && t != DType::f32) continue;
      const double acc = t == DType::f32 ? (tf32 ? 2e-3 : 1e-5) : 1e-6;
      for (const Shape3& s : shapes)
        for (int view = 0; view < 5; ++view) {
          CAPTURE(kiln::name_of(t));
          CAPTURE(tf32);
          CAPTURE(fmt::format("{}x{}x{} view {}", s.m, s.n, s.k, view));
          // 0 contiguous; 1 a and b transposed; 2 a misaligned by one element, b padded rows;
          // 3 neither dim contiguous (every other element); 4 b transposed (linear's weight:
          // f32 takes the wgmma path on sm_90a where rows are 16-byte aligned).
          const bool tr = view == 1;
          const Placed a = place(e, {s.m, s.k},
                                 tr          ? Shape{1, s.m}
                                 : view == 3 ? Shape{2 * s.k, 2}
                                             : Shape{s.k, 1},
                                 view == 2 ? 1 : 0, t, rng);
          const Placed b = place(e, {s.k, s.n},
                                 tr || view == 4 ? Shape{1, s.k}
                                 : view == 2     ? Shape{s.n + 8, 1}
                                 : view == 3     ? Shape{2 * s.n, 2}
                                                 : Shape{s.n, 1},
                                 0, t, rng);
          const kiln::Tensor c =
              kiln::call(e, "matmul", {a.view, b.view}, kiln::Attrs().set("tf32", tf32));
          check_product(c, a, b, s.m, s.n, s.k, out_tol(t), acc);
        }
    }
  MESSAGE(fmt::format("{} GEMM kernels compiled", e.counters().compiles));
}

TEST_CASE(
    "gpu: batched, broadcast, 1-D and linear products match the fp64 reference, fused "
    "and unfused" *
    doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(62);
  std::vector<Graph> graphs;
  for (DType t : kiln::kFloatDTypes) {
    auto product = [&](Shape as, Shape bs) {
      Graph g;
      g.output(kiln::apply("matmul", {g.input("a", as, t), g.input("b", bs, t)}), "c");
      graphs.push_back(g);
    };
    product({3, 1, 20, 48}, {2, 48, 72});  // two batch dims, each broadcast by one operand
    product({4, 33, 40}, {4, 40, 9});      // a batch of both
    product({5, 17, 64}, {64, 30});        // b shared by the batch: folds into M
    product({64}, {2, 64, 24});            // 1-D a
    product({2, 24, 64}, {64});            // 1-D b
    Graph lin;
    const auto x = lin.input("x", {3, 50, 96}, t);
    lin.output(kiln::apply("linear", {x, lin.input("w", {40, 96}, t), lin.input("bias", {40}, t)}),
               "y");
    graphs.push_back(lin);
  }
  for (const Graph& g : graphs) {
    CAPTURE(g.to_json());
    for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
  }
}

TEST_CASE("gpu: every epilogue pattern fused into a product matches the unfused plan and fp64" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(63);
  const std::int64_t M = 96, N = 80, K = 72;
  for (DType t : kiln::kFloatDTypes)
    for (int pattern = 0; pattern < 9; ++pattern) {
      Graph g;
      const auto x = g.input("x", {M, K}, t);
      const auto w = g.input("w", {N, K}, t);
      const auto h = kiln::apply("linear", {x, w});
      switch (pattern) {
        case 0:  // bias (a per-column vector), activation, residual add
          g.output(kiln::gelu(h + g.input("b", {N}, t)) + g.input("r", {M, N}, t), "y");
          break;
        case 1:  // scale, then clamp
          g.output(kiln::clamp(h * 0.25, -1.0, 1.5), "y");
          break;
        case 2:  // cast to another dtype
          g.output(kiln::cast(kiln::silu(h), t == DType::f32 ? DType::bf16 : DType::f32), "y");
          break;
        case 3:  // a per-row vector and a scalar tensor
          g.output(h * g.input("s", {M, 1}, t) - g.input("z", {}, t), "y");
          break;
        case 4:  // the product itself and two outputs from it
          g.output(h, "h");
          g.output(kiln::relu(h), "y");
          g.output(kiln::sigmoid(h) * 2.0, "z");
          break;
        case 5:  // linear's own bias, then tanh
          g.output(kiln::tanh(kiln::apply("linear", {x, w, g.input("b", {N}, t)})), "y");
          break;
        case 6:  // two products of one shape added (the second's epilogue reads the first)
          g.output(kiln::relu(h + kiln::apply("linear", {x, g.input("w2", {N, K}, t)})), "y");
          break;
        case 7: {  // per-column math (a batch norm's scale, once a column where staged), SiLU
          const auto col = [&g, N, t](const char* name) { return g.input(name, {N}, t); };
          const auto var = col("var");
          const auto scale = kiln::rsqrt(var * var + 0.5) * col("gamma");
          g.output(kiln::silu((h - col("mean")) * scale + col("beta")), "y");
          break;
        }
        default:  // an elementwise producer of an operand: its own kernel first
          g.output(kiln::apply("linear", {kiln::exp(x * 0.1), w}), "y");
          break;
      }
      CAPTURE(g.to_json());
      for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
    }
}

TEST_CASE("gpu: K = 0 gives the bias, M = 0 launches nothing" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  const std::vector<float> bias = {1.5f, -2.0f, 0.25f};
  const kiln::Tensor x = e.empty({4, 0}, DType::f32), w = e.empty({3, 0}, DType::f32);
  const kiln::Tensor b = e.from_host({3}, DType::f32, bias.data());
  const kiln::Tensor y = kiln::call(e, "linear", {x.view(), w.view(), b.view()});
  std::vector<float> got(12);
  y.copy_to_host(got.data());
  for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == bias[i % 3]);
  const kiln::Tensor none = kiln::call(
      e, "matmul", {e.empty({0, 8}, DType::bf16).view(), e.empty({8, 5}, DType::bf16).view()});
  CHECK(none.shape() == Shape{0, 5});
}

TEST_CASE("gpu: every split of the mma.sync path, as a tuning record sets it, over many clusters" *
          doctest::skip(!kiln::test::has_gpu() || !kiln::test::has_arch(9))) {
  // 256 tiles of 64 x 64, each split along K (8 stages of 32) over a cluster of 1 to 8 blocks:
  // several waves of clusters on the GPU, as kiln tune runs its candidates.
  kiln::Graph g;
  g.output(kiln::apply(
      "matmul", {g.input("a", {1024, 256}, DType::f32), g.input("b", {256, 1024}, DType::f32)}));
  const std::string signature = kiln::compiler::spec_id(kiln::plan_specs(g).at(0));
  auto rng = kiln::test::make_rng(63);
  for (int split : {1, 2, 4, 8}) {
    CAPTURE(split);
    kiln::test::TempDir dir;
    kiln::Engine e(kiln::test::with_tuning_record(
        dir, signature,
        {{"bm", 64}, {"bn", 64}, {"warps_m", 1}, {"warps_n", 1}, {"stages", 2}, {"split", split}}));
    for (const auto& f : kiln::test::check_on_gpu(e, g, rng)) FAIL_CHECK(f);
    REQUIRE(e.kernels().size() == 1);
    const std::string& name = e.kernels()[0].name;
    CHECK(name.find("64x64w1x1s2") != std::string::npos);
    CHECK((split == 1) == (name.find(fmt::format("k{}", split)) == std::string::npos));
  }
}

TEST_CASE("gpu: f32 4096^3 on every split of three tile shapes, against fp64 and each other" *
          doctest::skip(!kiln::test::has_gpu() || !kiln::test::has_arch(9))) {
  // Every split of the default tile and of the tuner's winner (sm_90, H100) against fp64 on
  // every 61st row and column, and against split 1 as kiln tune compares candidates: within
  // the agreement the family gives f32 products (2e-5 sqrt(K) of the mean |C|), beyond the
  // dtype's 1e-4 that once discarded every split 4 and 8 candidate.
  const std::int64_t n = 4096;
  kiln::Graph g;
  g.output(
      kiln::apply("matmul", {g.input("a", {n, n}, DType::f32), g.input("b", {n, n}, DType::f32)}));
  const std::string signature = kiln::compiler::spec_id(kiln::plan_specs(g).at(0));
  struct Tile {
    int bm, bn, wm, wn;
  };
  for (const Tile& tile : {Tile{128, 128, 2, 4}, Tile{256, 128, 2, 4}, Tile{256, 128, 4, 2}}) {
    std::vector<unsigned char> unsplit;
    for (int split : {1, 2, 4, 8}) {
      CAPTURE(fmt::format("{}x{} split {}", tile.bm, tile.bn, split));
      kiln::test::TempDir dir;
      kiln::Engine e(kiln::test::with_tuning_record(dir, signature,
                                                    {{"bm", tile.bm},
                                                     {"bn", tile.bn},
                                                     {"warps_m", tile.wm},
                                                     {"warps_n", tile.wn},
                                                     {"stages", 3},
                                                     {"split", split}}));
      auto rng = kiln::test::make_rng(64);  // the same operands for every split
      const Placed a = place(e, {n, n}, {n, 1}, 0, DType::f32, rng);
      const Placed b = place(e, {n, n}, {n, 1}, 0, DType::f32, rng);
      const kiln::Tensor c = kiln::call(e, "matmul", {a.view, b.view});
      REQUIRE(e.kernels().size() == 1);  // an eager call takes the tuning record, as a plan does
      const std::string name = e.kernels()[0].name;
      CAPTURE(name);
      CHECK(name.find(fmt::format("{}x{}w{}x{}s3{}", tile.bm, tile.bn, tile.wm, tile.wn,
                                  split > 1 ? fmt::format("k{}", split) : "")) !=
            std::string::npos);
      const double worst = check_product(c, a, b, n, n, n, 0, 1e-5, 61);
      const std::vector<unsigned char> got = kiln::test::bytes_of(c);
      if (split == 1) unsplit = got;
      const double diff = kiln::autotune::max_diff(unsplit, got, DType::f32);
      CHECK(diff <= 2e-5 * 64);
      MESSAGE(fmt::format("{}x{} split {}: worst error {:.3g} of the mean |C|, {:.3g} from split 1",
                          tile.bm, tile.bn, split, worst, diff));
    }
  }
}

TEST_CASE("gpu: persistent blocks take several tiles each: edges, epilogues and windows" *
          doctest::skip(!kiln::test::has_gpu())) {
  // 18 x 11 tiles of 128 x 256 (f32: 18 x 21 of 128 x 128) on at most one block per SM, each
  // thus one to three tiles with the ring's uses running on from one to the next; every edge cut.
  // Then 157 x 1 tiles of 128 x 64; then plain outputs, stored by TMA.
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(67);
  const std::int64_t M = 2200, N = 2600, K = 40;
  for (DType t : kiln::kFloatDTypes) {
    CAPTURE(kiln::name_of(t));
    Graph fused;
    const auto x = fused.input("x", {M, K}, t);
    const auto w = fused.input("w", {N, K}, t);
    const auto h = kiln::apply("linear", {x, w, fused.input("b", {N}, t)});
    fused.output(kiln::gelu(h) + fused.input("r", {M, N}, t), "y");
    Graph qkv;  // three windows of one product, the middle one not a multiple of the tile
    const auto y = kiln::apply("linear", {qkv.input("x", {M, K}, t), qkv.input("w", {N, K}, t)});
    qkv.output(kiln::slice(y, -1, 0, 1000), "q");
    qkv.output(kiln::slice(y, -1, 1000, 1800), "k");
    qkv.output(kiln::slice(y, -1, 1800, N), "v");
    Graph narrow;  // 157 tiles 64 columns wide (N <= 64): several a block as well
    narrow.output(kiln::gelu(kiln::apply(
                      "linear", {narrow.input("x", {20000, K}, t), narrow.input("w", {48, K}, t),
                                 narrow.input("b", {48}, t)})),
                  "y");
    // Plain outputs stored by TMA over several tiles a block, at K 40 (one step) and K 520 (nine
    // steps). Products hold no chunks (gemm_sm90_held.cuh's held_chunks: convolutions only).
    Graph plain, deep;
    plain.output(kiln::silu(kiln::apply(
                     "linear", {plain.input("x", {M, K}, t), plain.input("w", {N, K}, t)})),
                 "y");
    deep.output(kiln::apply("matmul", {deep.input("x", {M, 520}, t), deep.input("w", {520, N}, t)}),
                "y");
    for (const Graph* g : {&fused, &qkv, &narrow, &plain, &deep}) {
      REQUIRE(kiln::Plan(*g).kernels("sm_90a").size() == 1);
      for (const auto& f : kiln::test::check_on_gpu(e, *g, rng)) FAIL_CHECK(f);
    }
  }
}

TEST_CASE("gpu: the wgmma path at every tile width and split, as a tuning record sets it" *
          doctest::skip(!kiln::test::has_gpu() || !kiln::test::has_arch(9))) {
  // bf16 with B along K (linear) and along N (matmul), exact f32 (bn 64 or 128); bias and gelu;
  // 300 x 200 x 264 cuts every tile edge and K's last stage; each split in clusters of 4.
  struct Case {
    DType t;
    bool linear;
    std::vector<int> widths;
  };
  const std::vector<Case> cases = {{DType::bf16, true, {64, 80, 128, 256}},
                                   {DType::bf16, false, {64, 128, 256}},
                                   {DType::f32, true, {64, 128}}};
  auto rng = kiln::test::make_rng(71);
  for (const Case& c : cases) {
    const std::int64_t M = 300, N = 200, K = 264;
    Graph g;
    const auto x = g.input("x", {M, K}, c.t);
    const auto w = c.linear ? g.input("w", {N, K}, c.t) : g.input("w", {K, N}, c.t);
    const auto h = c.linear ? kiln::apply("linear", {x, w, g.input("b", {N}, c.t)})
                            : kiln::apply("matmul", {x, w});
    g.output(kiln::gelu(h), "y");
    const std::string signature = kiln::compiler::spec_id(kiln::plan_specs(g).at(0));
    for (int bn : c.widths)
      for (int split : {1, 4}) {
        CAPTURE(fmt::format("{} {} bn {} split {}", kiln::name_of(c.t), c.linear, bn, split));
        kiln::test::TempDir dir;
        kiln::Engine e(kiln::test::with_tuning_record(
            dir, signature, {{"bn", bn}, {"stages", 3}, {"wgmma", 1}, {"split", split}}));
        for (const auto& f : kiln::test::check_on_gpu(e, g, rng)) FAIL_CHECK(f);
        REQUIRE(e.kernels().size() == 1);
        CHECK(e.kernels()[0].name.find(fmt::format("__wg128x{}s3{}_", bn, split > 1 ? "k4" : "")) !=
              std::string::npos);
      }
  }
}
