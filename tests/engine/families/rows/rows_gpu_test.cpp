// Row ops on the GPU against the fp64 reference: every op x dtype x pattern, edge shapes
// (1, odd, long rows, many short rows), outputs poisoned first.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <kiln/graph.hpp>
#include <regex>
#include <tuple>

#include "cache/tuning.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/families/rows/rows.hpp"
#include "ops/op.hpp"
#include "tests/engine/cases.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;

TEST_CASE("gpu: every row op x dtype x pattern matches the fp64 reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::test::TempDir tmp;
  kiln::EngineOptions o;
  o.cache_dir = tmp.path();
  kiln::Engine e(o);
  auto rng = kiln::test::make_rng(21);
  const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
      {1, 1}, {3, 7}, {5, 1000}, {2, 4097}, {2, 65536}, {700, 33}, {64, 4096}};
  int graphs = 0;
  for (auto [R, C] : shapes)
    for (DType t : kiln::kFloatDTypes)
      for (const Graph& g : kiln::test::row_graphs(t, R, C)) {
        CAPTURE(g.to_json());
        for (const auto& f : kiln::test::check_on_gpu(e, g, rng)) FAIL_CHECK(f);
        ++graphs;
      }
  MESSAGE(fmt::format("{} row graphs, {} kernels compiled", graphs, e.counters().compiles));
}

namespace {

// Long rows on the GPU against the fp64 reference, split between the blocks of a cluster where
// clusters run; each shape's ops that write the row (12) split there.
void check_long_rows(const std::vector<std::tuple<DType, std::int64_t, std::int64_t>>& shapes,
                     std::uint64_t seed) {
  kiln::test::TempDir tmp;
  kiln::EngineOptions o;
  o.cache_dir = tmp.path();
  kiln::Engine e(o);
  auto rng = kiln::test::make_rng(seed);
  int graphs = 0;
  for (auto [t, R, C] : shapes)
    for (const Graph& g : kiln::test::row_graphs(t, R, C)) {
      CAPTURE(g.to_json());
      for (const auto& f : kiln::test::check_on_gpu(e, g, rng)) FAIL_CHECK(f);
      ++graphs;
    }
  int split = 0;
  for (const auto& k : e.kernels())
    split += std::regex_search(k.name, std::regex("__r2v[148]s[48]$"));
  MESSAGE(fmt::format("{} graphs, {} kernels, {} of them split (arch {})", graphs,
                      e.kernels().size(), split, e.arch()));
  if (kiln::has_clusters(e.arch())) CHECK(split >= int(shapes.size()) * 12);
}

}  // namespace

// Two cases, so that the suite's slices run them side by side (each takes minutes).
TEST_CASE("gpu: long rows (f32, odd, in registers) split between blocks match the fp64 reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  // Parts that end mid-batch (40000 = 10000 groups of 4 over 4 blocks, stashed), odd rows in
  // scalar loads (33333 over 4 blocks), bf16 rows of 50000 in registers (8 blocks of 224
  // threads x 4 groups of 8, the last block partly idle).
  check_long_rows({{DType::f32, 3, 40000}, {DType::bf16, 2, 33333}, {DType::bf16, 3, 50000}}, 23);
}

TEST_CASE("gpu: long rows (f16 of 131072, 64 of 65536) split between blocks match the fp64 "
          "reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  // f16 of 131072 (8 blocks, stashed). And 64 bf16 rows of 65536 (512 blocks in clusters of 8):
  // a cluster merge that let a block exit while another still read its statistic (304e45d)
  // passed every shape above (a few clusters) and failed at launch on the benchmark's graph of
  // rms_norm without a weight at this shape (kiln bench; whether this case alone catches it was
  // not shown: see bench/NOTES.md). The merge now pushes each warp's statistic into every block
  // (row_reduce.cuh): a block leaves only once every push to it has landed, with no cluster
  // barrier at its exit.
  check_long_rows({{DType::f16, 2, 131072}, {DType::bf16, 64, 65536}}, 24);
}

TEST_CASE("gpu: row ops along any axis and over all elements match the fp64 reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::test::TempDir tmp;
  kiln::EngineOptions o;
  o.cache_dir = tmp.path();
  kiln::Engine e(o);
  auto rng = kiln::test::make_rng(22);
  // Every dtype on [3, 7]; the other shapes one dtype each, in turn (each shape compiles anew).
  const std::vector<kiln::Shape> shapes = {{3, 7},    {3, 7},     {3, 7},      {1, 1},    {5, 1, 9},
                                           {2, 4097}, {1000, 33}, {7, 300, 5}, {70000, 2}};
  int graphs = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    for (DType t : {kiln::kFloatDTypes[i % 3]})
      for (const Graph& g : kiln::test::axis_graphs(t, shapes[i])) {
        CAPTURE(g.to_json());
        for (const auto& f : kiln::test::check_on_gpu(e, g, rng)) FAIL_CHECK(f);
        ++graphs;
      }
  MESSAGE(fmt::format("{} axis graphs, {} kernels compiled", graphs, e.counters().compiles));
}

TEST_CASE("gpu: eager row ops through kiln::call, and softmax with -inf masks" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  std::vector<float> h(4 * 8);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = (i % 3 == 0) ? -INFINITY : float(i % 5) * 0.5f;
  kiln::Tensor x = e.from_host({4, 8}, DType::f32, h.data());
  kiln::Tensor p = kiln::call(e, "softmax", {x});
  kiln::Tensor m = kiln::call(e, "max", {x});
  std::vector<float> hp(32), hm(4);
  p.copy_to_host(hp.data());
  m.copy_to_host(hm.data());
  for (int r = 0; r < 4; ++r) {
    double sum = 0, mx = -INFINITY;
    for (int c = 0; c < 8; ++c) {
      sum += hp[std::size_t(r * 8 + c)];
      mx = std::max(mx, double(h[std::size_t(r * 8 + c)]));
      if (std::isinf(h[std::size_t(r * 8 + c)])) CHECK(hp[std::size_t(r * 8 + c)] == 0.0f);
    }
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
    CHECK(hm[std::size_t(r)] == float(mx));
  }
}

TEST_CASE("gpu: rows holding NaN or -inf give what PyTorch gives, in every strategy" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(29);
  // Row 0 finite; row 1 one NaN; row 2 all -inf; row 3 every 7th value -inf. Rows of 4096 run
  // in registers, of 65536 split between blocks (sm_90), of 70001 streamed (odd: scalar loads).
  for (std::int64_t C : {4096, 65536, 70001})
    for (DType t : {DType::f32, DType::bf16}) {
      CAPTURE(C);
      CAPTURE(kiln::name_of(t));
      const std::size_t size = kiln::size_of(t);
      std::vector<unsigned char> h = kiln::test::random_bytes(t, std::size_t(4 * C), -3, 3, rng);
      const auto put = [&](std::int64_t r, std::int64_t c, double v) {
        kiln::store_element(t, v, h.data() + std::size_t(r * C + c) * size);
      };
      put(1, C / 3, NAN);
      for (std::int64_t c = 0; c < C; ++c) put(2, c, -INFINITY);
      for (std::int64_t c = 0; c < C; c += 7) put(3, c, -INFINITY);
      kiln::Tensor x = e.from_host({4, C}, t, h.data());
      for (const char* op : {"softmax", "log_softmax", "layer_norm", "rms_norm"}) {
        CAPTURE(op);
        Graph g;
        auto in = g.input("x", {4, C}, t);
        g.output(std::string(op).find("norm") != std::string::npos ? kiln::norm(op, in)
                                                                   : kiln::apply(op, {in}));
        const auto outs = kiln::Plan(g).run(e, {{"x", x.view()}});
        const std::vector<unsigned char> y = kiln::test::bytes_of(outs.begin()->second);
        const auto at = [&](std::int64_t r, std::int64_t c) {
          return kiln::load_element(t, y.data() + std::size_t(r * C + c) * size);
        };
        int wrong = 0;
        double sum0 = 0, sum3 = 0;
        for (std::int64_t c = 0; c < C; ++c) {
          const std::string s(op);
          const bool neg_inf = c % 7 == 0;  // in row 3
          wrong += !std::isfinite(at(0, c));
          wrong += !std::isnan(at(1, c));  // a NaN anywhere: the whole row
          wrong += !std::isnan(at(2, c));  // all -inf: NaN in all four ops
          if (s == "softmax") {
            wrong += neg_inf ? at(3, c) != 0.0 : !(at(3, c) > 0.0);
            sum0 += at(0, c), sum3 += at(3, c);
          } else if (s == "log_softmax") {
            wrong += neg_inf ? at(3, c) != -INFINITY : !std::isfinite(at(3, c));
            sum0 += std::exp(at(0, c)), sum3 += neg_inf ? 0.0 : std::exp(at(3, c));
          } else if (s == "layer_norm") {
            wrong += !std::isnan(at(3, c));  // the mean is -inf
          } else {
            wrong += neg_inf ? !std::isnan(at(3, c)) : at(3, c) != 0.0;  // rstd 0: -inf * 0, x * 0
          }
        }
        CHECK(wrong == 0);
        if (std::string(op).find("softmax") != std::string::npos) {
          CHECK(sum0 == doctest::Approx(1.0).epsilon(t == DType::f32 ? 1e-4 : 2e-2));
          CHECK(sum3 == doctest::Approx(1.0).epsilon(t == DType::f32 ? 1e-4 : 2e-2));
        }
      }
    }
}

TEST_CASE("gpu: layer_norm of rows whose mean passes 1.8e19 is finite, in every strategy" *
          doctest::skip(!kiln::test::has_gpu())) {
  // A merge of a statistic with an empty one (a lane or warp past a short row's end) once
  // computed d * d * 0 with d the mean: inf * 0 = NaN once d * d overflows. Row 0 all 3e19, row 1
  // 3e19 plus steps of a few ulps of the dtype: every normalized value finite. (Their size is
  // the rounding of a mean of 3e19, not checked.)
  kiln::Engine e(kiln::test::on_gpu());
  for (std::int64_t C : {1, 3, 33, 1000, 4097, 65536, 70001})
    for (DType t : {DType::f32, DType::bf16}) {
      CAPTURE(C);
      CAPTURE(kiln::name_of(t));
      const std::size_t size = kiln::size_of(t);
      std::vector<unsigned char> h(std::size_t(2 * C) * size);
      for (std::int64_t c = 0; c < 2 * C; ++c)
        kiln::store_element(t,
                            3e19 + double(c % C % 7) * (c < C             ? 0.0
                                                        : t == DType::f32 ? 1e13
                                                                          : 3e17),
                            h.data() + std::size_t(c) * size);
      kiln::Tensor x = e.from_host({2, C}, t, h.data());
      Graph g;
      g.output(kiln::norm("layer_norm", g.input("x", {2, C}, t)));
      const auto outs = kiln::Plan(g).run(e, {{"x", x.view()}});
      const std::vector<unsigned char> y = kiln::test::bytes_of(outs.begin()->second);
      int wrong = 0;
      for (std::int64_t c = 0; c < 2 * C; ++c) {
        const double v = kiln::load_element(t, y.data() + std::size_t(c) * size);
        wrong += !std::isfinite(v);
      }
      CHECK(wrong == 0);
    }
}

namespace {

// Shapes whose rows run on one warp in registers (1, 3 and 2 groups a thread), in row counts
// that no pack divides (the last block's extra warps leave at once).
const std::vector<std::tuple<DType, std::int64_t, std::int64_t>> kPackShapes = {
    {DType::f32, 5, 100}, {DType::bf16, 37, 768}, {DType::f16, 13, 33}};

// Records of GPU `gpu` that pack `pack` rows a block in each row kernel of `g` (x of `cols`
// columns) whose default is one warp in registers.
kiln::cache::TuningDb pack_records(const Graph& g, std::int64_t cols, int pack,
                                   const std::string& gpu) {
  kiln::cache::TuningDb db(gpu);
  for (const kiln::KernelSpec& s : kiln::plan_specs(g)) {
    std::smatch m;  // a row kernel "<stem>__r2v<vec>" along the last axis
    if (!std::regex_search(s.name, m, std::regex("__r[0-9]v([0-9]+)$"))) continue;
    const int vec = std::stoi(m[1]);
    const kiln::RowTunables d = kiln::default_row_tunables(cols / vec, vec);
    if (d.block != 32 || d.items == 0) continue;
    db.put(kiln::test::tuning_record(gpu, kiln::compiler::spec_id(s),
                                     {{"block", 32}, {"items", d.items}, {"pack", pack}}, 1));
  }
  return db;
}

int count_packed(const std::vector<std::string>& names, int pack) {
  return int(std::count_if(names.begin(), names.end(), [&](const std::string& n) {
    return std::regex_search(n, std::regex(fmt::format("p{}$", pack)));
  }));
}

}  // namespace

TEST_CASE("packed rows: a tuning record's pack renders rows_packed with a grid of whole packs") {
  int packed = 0;
  for (const auto& [t, R, C] : kPackShapes)
    for (const Graph& g : kiln::test::row_graphs(t, R, C))
      for (int pack : {2, 4, 8}) {
        const kiln::cache::TuningDb db = pack_records(g, C, pack, "GPU A");
        std::vector<std::string> names;
        for (const kiln::KernelSpec& s : kiln::plan_specs(g, true, {}, &db)) {
          names.push_back(s.name);
          if (count_packed({s.name}, pack))
            CHECK(s.expression.find(fmt::format("kiln::rows_packed<")) == 0);
        }
        packed += count_packed(names, pack);
      }
  CHECK(packed >= 3 * 3 * 4);  // three shapes x three packs x at least four row ops
}

TEST_CASE("gpu: rows packed 2, 4 and 8 a block (a tuning record's pack) match the fp64 reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  auto rng = kiln::test::make_rng(47);
  int packed = 0;
  for (const auto& [t, R, C] : kPackShapes)
    for (const Graph& g : kiln::test::row_graphs(t, R, C))
      for (int pack : {2, 4, 8}) {
        CAPTURE(g.to_json());
        CAPTURE(pack);
        kiln::test::TempDir tmp;
        kiln::EngineOptions o;
        o.cache_dir = tmp.path();
        const kiln::cache::TuningDb db = pack_records(g, C, pack, kiln::Engine(o).device_name());
        if (db.records().empty()) continue;
        db.save(tmp.path());
        kiln::Engine e(o);
        for (const auto& f : kiln::test::check_on_gpu(e, g, rng)) FAIL_CHECK(f);
        std::vector<std::string> names;
        for (const auto& k : e.kernels()) names.push_back(k.name);
        packed += count_packed(names, pack);
      }
  MESSAGE(fmt::format("{} packed kernels run", packed));
  CHECK(packed >= 3 * 3 * 4);
}
