// Rows of a dynamic length ("?"): a kernel per bucket of lengths, not per length (the buckets
// themselves: row_buckets_test.cpp). 200 lengths of softmax and layer_norm compile at most 16
// kernels; `kiln precompile` of such a graph compiles every kernel a run of any length uses; and on
// the GPU every length matches the fp64 reference.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <kiln/graph.hpp>
#include <set>

#include "bench/lengths.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/passes/fusion.hpp"
#include "tests/engine/dynamic_graphs.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;
using kiln::test::bound;
using kiln::test::dynamic_row_graph;

namespace {

std::set<std::string> ids(const std::vector<kiln::KernelSpec>& specs) {
  std::set<std::string> out;
  for (const auto& s : specs) out.insert(kiln::compiler::spec_id(s));
  return out;
}

// How replay's bf16 output `got` differs from run's `want`: how many elements, the first, and
// each side's worst distance from the fp64 reference `ref`.
std::string replay_differs(const std::vector<unsigned char>& got,
                           const std::vector<unsigned char>& want, const std::vector<double>& ref,
                           std::int64_t L) {
  std::size_t n = 0, first = 0;
  double got_off = 0, want_off = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double a = kiln::load_element(DType::bf16, got.data() + 2 * i),
                 w = kiln::load_element(DType::bf16, want.data() + 2 * i);
    got_off = std::max(got_off, std::fabs(a - ref[i]));
    want_off = std::max(want_off, std::fabs(w - ref[i]));
    if (std::memcmp(got.data() + 2 * i, want.data() + 2 * i, 2) != 0 && n++ == 0) first = i;
  }
  return fmt::format(
      "replay differs from run in {} of {} elements, first at row {} column {}: {} against {}; "
      "worst distance from the fp64 reference: replay {}, run {}",
      n, ref.size(), first / std::size_t(L), first % std::size_t(L),
      kiln::load_element(DType::bf16, got.data() + 2 * first),
      kiln::load_element(DType::bf16, want.data() + 2 * first), got_off, want_off);
}

}  // namespace

TEST_CASE("a dynamic row length: at most 16 kernels for 200 lengths; precompile lists them all") {
  const std::vector<std::int64_t> lengths = kiln::bench::dynamic_row_lengths();
  REQUIRE(lengths.size() == 200);
  REQUIRE(lengths.front() == 1);
  REQUIRE(lengths.back() == 65536);
  std::set<std::string> used;
  for (const char* op : {"softmax", "layer_norm"}) {
    const Graph g = dynamic_row_graph(op, 4096, DType::bf16);
    const std::set<std::string> precompiled = ids(kiln::plan_specs(g));
    std::set<std::string> names;
    for (std::int64_t length : lengths) {
      CAPTURE(length);
      const auto specs = kiln::run_specs(g, length);
      REQUIRE(specs.size() == 1);
      used.insert(kiln::compiler::spec_id(specs[0]));
      names.insert(specs[0].name);
      CHECK(precompiled.count(kiln::compiler::spec_id(specs[0])) == 1);
      CHECK(specs[0].expression.find("kiln::RowsAt<") != std::string::npos);
    }
    MESSAGE(fmt::format("{}: {} kernels for {} lengths: {}", op, names.size(), lengths.size(),
                        fmt::join(names, " ")));
  }
  CHECK(used.size() <= 16);
  // A static graph of one of those lengths keeps its specialized kernel.
  const auto fixed = kiln::plan_specs(bound(dynamic_row_graph("softmax", 4096, DType::bf16), 1000));
  REQUIRE(fixed.size() == 1);
  CHECK(fixed[0].expression.find("kiln::Layout<") != std::string::npos);
}

TEST_CASE("kiln precompile of a dynamic row length lists the kernel of every length") {
  // Every length to 2048, then each power of two and its neighbours, to 2^18: a run at any of
  // them uses a kernel that plan_specs (kiln precompile, Plan::compile) listed.
  std::vector<std::int64_t> lengths;
  for (std::int64_t L = 1; L <= 2048; ++L) lengths.push_back(L);
  for (std::int64_t p = 4096; p <= (1 << 18); p *= 2)
    for (std::int64_t d = -9; d <= 9; ++d) lengths.push_back(p + d);
  for (const char* op : {"softmax", "layer_norm", "rms_norm", "sum"})
    for (DType t : {DType::f32, DType::bf16})
      for (const char* arch : {"sm_80", "sm_90a"}) {
        Graph g;
        auto x = g.input("x", {64, -1}, t);
        if (std::string(op) == "layer_norm" || std::string(op) == "rms_norm")
          g.output(kiln::apply(op, {x, g.input("w", {-1}, t)}));
        else
          g.output(kiln::apply(op, {x}));
        const std::set<std::string> listed = ids(kiln::plan_specs(g, true, {}, nullptr, arch));
        int missing = 0;
        std::set<std::string> used;
        for (std::int64_t L : lengths) {
          const auto specs = kiln::run_specs(g, L, true, arch);
          if (!specs.empty()) used.insert(specs[0].name);
          if (!specs.empty() && !listed.count(kiln::compiler::spec_id(specs[0])) && ++missing <= 3)
            FAIL_CHECK(fmt::format("{} {} {}: length {} runs {}, not listed", op, name_of(t), arch,
                                   L, specs[0].name));
        }
        CHECK(used.size() <= listed.size());
        CHECK(listed.size() <= 16);
        MESSAGE(fmt::format("{} {} {}: {} lengths on {} of the {} listed kernels", op, name_of(t),
                            arch, lengths.size(), used.size(), listed.size()));
      }
}

TEST_CASE("gpu: rows of a dynamic length match the fp64 reference at 200 lengths, in 16 kernels" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(31);
  const std::vector<std::int64_t> lengths = kiln::bench::dynamic_row_lengths();
  for (const char* op : {"softmax", "layer_norm"}) {
    const Graph g = dynamic_row_graph(op, 3, DType::bf16);
    const kiln::Plan plan(g);  // one plan for every length, as an app keeps it
    for (std::int64_t length : lengths) {
      CAPTURE(op);
      CAPTURE(length);
      for (const auto& f : kiln::test::check_on_gpu(e, bound(g, length), rng, false, &plan))
        FAIL_CHECK(f);
    }
  }
  const std::int64_t compiled = e.counters().compiles;
  CHECK(compiled <= 16);
  // Precompiled: a run of any length compiles nothing more.
  kiln::Engine f(kiln::test::on_gpu());
  std::vector<std::pair<Graph, kiln::Plan>> plans;
  for (const char* op : {"softmax", "layer_norm"}) {
    const Graph g = dynamic_row_graph(op, 3, DType::bf16);
    plans.emplace_back(g, kiln::Plan(g));
    plans.back().second.compile(f);
  }
  const std::int64_t precompiled = f.counters().compiles;
  for (std::size_t i = 0; i < lengths.size(); i += 7)
    for (const auto& [g, p] : plans) {
      const Graph b = bound(g, lengths[i]);
      for (const auto& fail : kiln::test::check_on_gpu(f, b, rng, false, &p)) FAIL_CHECK(fail);
    }
  CHECK(f.counters().compiles == precompiled);
  MESSAGE(fmt::format("200 lengths of softmax and layer_norm: {} kernels; precompiled: {}",
                      compiled, precompiled));
}

TEST_CASE(
    "gpu: dynamic row lengths with a fused prologue and epilogue, reductions, f32, and a "
    "dynamic batch match the fp64 reference" *
    doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(37);
  std::vector<Graph> graphs;
  for (DType t : {DType::f32, DType::f16}) {
    Graph g;  // silu(softmax(x * 0.5 + b) * 2 + x) over [?, 5, ?], b broadcast over rows
    auto x = g.input("x", {-1, 5, -1}, t);
    auto y = kiln::apply("softmax", {x * 0.5 + g.input("b", {-1}, t)});
    g.output(kiln::apply("silu", {y * 2.0 + x}));
    graphs.push_back(g);
    Graph r;  // a reduction along a dynamic row, and rms_norm with a weight
    auto rx = r.input("x", {7, -1}, t);
    r.output(kiln::apply("max", {rx}, {{"axis", -1}}));
    r.output(kiln::apply("rms_norm", {rx, r.input("w", {-1}, t)}));
    graphs.push_back(r);
  }
  const std::vector<std::int64_t> lengths = {1,  2,    3,    5,     8,     31,
                                             33, 1000, 4097, 16385, 40001, 65536};
  for (const Graph& g : graphs) {
    const kiln::Plan plan(g);
    for (std::int64_t length : lengths) {
      const Graph b = bound(g, length, g.node(0).shape.size() == 3 ? 2 : 0);
      CAPTURE(b.to_json());
      for (const auto& f : kiln::test::check_on_gpu(e, b, rng, false, &plan)) FAIL_CHECK(f);
    }
  }
}

TEST_CASE(
    "gpu: dynamic row lengths on padded, misaligned and strided views match the fp64 "
    "reference" *
    doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(41);
  for (DType t : {DType::f32, DType::bf16}) {
    Graph g;  // layer_norm over x [5, ?], weight and bias [?]
    g.output(kiln::apply("layer_norm",
                         {g.input("x", {5, -1}, t), g.input("w", {-1}, t), g.input("b", {-1}, t)}));
    const kiln::Plan plan(g);
    for (std::int64_t L : {1, 2, 7, 1000, 4097, 40001}) {
      CAPTURE(t);
      CAPTURE(L);
      const Graph b = bound(g, L);
      const kiln::test::HostInputs host = kiln::test::random_inputs(b, rng);
      const std::vector<double> want = kiln::test::evaluate(b, host).at(b.outputs().at(0));
      const std::size_t es = kiln::size_of(t);
      // x: rows L + 3 apart, one element past an aligned start (no vector width fits); w: every
      // second element of a buffer; b: contiguous, one element in.
      const std::int64_t pitch = L + 3;
      std::vector<unsigned char> xs(std::size_t(5 * pitch + 1) * es, 0),
          ws(std::size_t(2 * L) * es, 0), bs(std::size_t(L + 1) * es, 0);
      for (std::int64_t r = 0; r < 5; ++r)
        std::memcpy(&xs[std::size_t(r * pitch + 1) * es], &host.at("x")[std::size_t(r * L) * es],
                    std::size_t(L) * es);
      for (std::int64_t c = 0; c < L; ++c)
        std::memcpy(&ws[std::size_t(2 * c) * es], &host.at("w")[std::size_t(c) * es], es);
      std::memcpy(&bs[es], host.at("b").data(), std::size_t(L) * es);
      const kiln::Tensor xd = e.from_host({std::int64_t(xs.size() / es)}, t, xs.data()),
                         wd = e.from_host({std::int64_t(ws.size() / es)}, t, ws.data()),
                         bd = e.from_host({std::int64_t(bs.size() / es)}, t, bs.data());
      kiln::TensorView xv = xd.view(), wv = wd.view(), bv = bd.view();
      xv.data += es, xv.capacity -= es, xv.shape = {5, L}, xv.strides = {pitch, 1};
      wv.shape = {L}, wv.strides = {2};
      bv.data += es, bv.capacity -= es, bv.shape = {L}, bv.strides = {1};
      kiln::Tensor y = e.empty({5, L}, t);
      y.fill_bytes(0xff);
      plan.run(e, {{"x", xv}, {"w", wv}, {"b", bv}}, {{b.node(b.outputs().at(0)).name, y.view()}});
      std::vector<unsigned char> got(y.bytes());
      y.copy_to_host(got.data());
      const double tol = t == DType::f32 ? 1e-4 : 2e-2;
      int bad = 0;
      for (std::size_t i = 0; i < want.size(); ++i) {
        const double have = kiln::load_element(t, got.data() + i * es);
        if (!(std::fabs(have - want[i]) <= tol * std::max(1.0, std::fabs(want[i]))) && ++bad <= 3)
          FAIL_CHECK(fmt::format("element {}: {} against {}", i, have, want[i]));
      }
    }
  }
}

TEST_CASE(
    "gpu: replay of a dynamic row length (clusters sized at launch, as graph node "
    "attributes) gives run's bits, with the same and with new buffers" *
    doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(43);
  for (const std::string op : {"softmax", "layer_norm"}) {
    const Graph g = dynamic_row_graph(op, 3, DType::bf16);
    const kiln::Plan plan(g);
    const std::string y = g.node(g.outputs().at(0)).name;
    // In registers in one block; split 8 ways in registers (width 8); stashed 4 ways (width 1).
    for (std::int64_t L : {1000, 8000, 60000, 40001, 65535}) {
      CAPTURE(op);
      CAPTURE(L);
      const Graph b = bound(g, L);
      const kiln::test::HostInputs host = kiln::test::random_inputs(b, rng);
      const kiln::test::DeviceInputs in = kiln::test::upload(e, b, host);
      const std::map<std::string, kiln::TensorView>& views = in.views;
      const auto fetch = [](const kiln::Tensor& t) {
        std::vector<unsigned char> h(t.bytes());
        t.copy_to_host(h.data());
        return h;
      };
      const std::vector<unsigned char> want = fetch(plan.run(e, views).at(y));
      for (int round = 0; round < 3; ++round) {  // the graph built, replayed, then new buffers
        CAPTURE(round);
        kiln::Tensor out = e.empty({3, L}, DType::bf16);
        out.fill_bytes(0xff);
        plan.replay(e, views, {{y, out.view()}});
        const std::vector<unsigned char> got = fetch(out);
        if (got != want)
          FAIL_CHECK(
              replay_differs(got, want, kiln::test::evaluate(b, host).at(g.outputs().at(0)), L));
      }
    }
  }
}
