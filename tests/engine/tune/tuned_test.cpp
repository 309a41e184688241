// Tuning records in specialization: a record of this GPU picks the kernel's parameters, none
// (or one that no longer fits) leaves the default; `kiln cache explain` names records of another
// GPU that are not applied. And, on a GPU, `autotune::tune_graph` over real kernels.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <kiln/graph.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "cache/tuning.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/families/elementwise/elementwise.hpp"
#include "engine/families/rows/rows.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/tune/tuner.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;
using kiln::cache::TuningDb;
using kiln::cache::TuningRecord;

namespace {

Graph softmax_graph(DType t, std::int64_t rows, std::int64_t cols) {
  Graph g;
  g.output(kiln::apply("softmax", {g.input("x", {rows, cols}, t) * 2.0}));
  return g;
}

TuningRecord record_for(const kiln::KernelSpec& spec, const std::string& gpu,
                        kiln::Tunables winner) {
  return kiln::test::tuning_record(gpu, kiln::compiler::spec_id(spec), std::move(winner), 1);
}

// "block=128 items=4: 12.3 us, output checked" -> {block: 128, items: 4}
kiln::Tunables parse_candidate(const std::string& line) {
  kiln::Tunables t;
  std::istringstream in(line.substr(0, line.find(':')));
  for (std::string kv; in >> kv;)
    t[kv.substr(0, kv.find('='))] = std::stoi(kv.substr(kv.find('=') + 1));
  return t;
}

const std::regex tuned_name(
    "_b[0-9]+[iu][0-9]+(s[0-9])?$");  // what specialization appends to a tuned kernel's name

}  // namespace

TEST_CASE(
    "tuning records: this GPU's record picks the parameters; none, or a stale one, leaves the "
    "default") {
  const Graph g = softmax_graph(DType::f32, 64, 4096);  // 1024 groups of 4: default 256 threads x 4
  const kiln::KernelSpec base = kiln::plan_specs(g).at(0);
  CHECK(base.expression.find(", 256, 4>") != std::string::npos);

  TuningDb db("GPU A");
  CHECK(kiln::plan_specs(g, true, {}, &db).at(0).expression == base.expression);  // no record
  db.put(record_for(base, "GPU A", {{"block", 128}, {"items", 8}}));
  const kiln::KernelSpec tuned = kiln::plan_specs(g, true, {}, &db).at(0);
  CHECK(tuned.expression.find(", 128, 8>") != std::string::npos);
  CHECK(tuned.name == base.name + "_b128i8");

  // A record for another kernel (other shape) does not apply here.
  const kiln::KernelSpec other = kiln::plan_specs(softmax_graph(DType::f32, 64, 2048)).at(0);
  CHECK(kiln::plan_specs(softmax_graph(DType::f32, 64, 2048), true, {}, &db).at(0).expression ==
        other.expression);

  // A record whose parameters no longer fit the kernel (hand-edited, or another kiln's): default.
  db.put(record_for(base, "GPU A", {{"block", 32}, {"items", 1}}));  // does not cover a row
  CHECK(kiln::plan_specs(g, true, {}, &db).at(0).expression == base.expression);
  db.put(record_for(base, "GPU A", {{"threads", 128}}));  // not a tunable of the template
  CHECK(kiln::plan_specs(g, true, {}, &db).at(0).expression == base.expression);
}

TEST_CASE("tunables by name: each template names its own, and refuses another's") {
  Graph g;
  auto a = g.input("a", {1000}, DType::f32);
  g.output(kiln::apply("silu", {a * 3.0}));
  const kiln::KernelSpec base = kiln::plan_specs(g).at(0);
  TuningDb db("GPU A");
  db.put(record_for(base, "GPU A", {{"block", 128}, {"unroll", 4}}));
  const kiln::KernelSpec tuned = kiln::plan_specs(g, true, {}, &db).at(0);
  CHECK(tuned.expression.find(", 128, 4>") != std::string::npos);
  CHECK(tuned.name == base.name + "_b128u4");
  db.put(record_for(base, "GPU A", {{"block", 128}, {"items", 4}}));  // a row tunable
  CHECK(kiln::plan_specs(g, true, {}, &db).at(0).expression == base.expression);
  CHECK_THROWS_WITH_AS(kiln::row_tunables({{"unroll", 2}}, "softmax_f32"),
                       doctest::Contains("'unroll' is not a tunable of the row templates"),
                       kiln::ArgumentError);
  CHECK_THROWS_WITH_AS(kiln::elementwise_tunables({{"items", 2}}, "add_f32"),
                       doctest::Contains("'items' is not a tunable of the elementwise template"),
                       kiln::ArgumentError);
}

TEST_CASE(
    "tuning records of the column template: block and cols; one that cannot run leaves the "
    "default") {
  Graph g;
  g.output(kiln::apply("sum", {g.input("x", {32768, 4096}, DType::f32)}, {{"axis", 0}}));
  const kiln::KernelSpec base = kiln::plan_specs(g).at(0);
  CHECK(base.name == "sum_f32__col2v4");
  CHECK(base.expression.find(", 8, 64, 32768, 1024>") != std::string::npos);  // BX 8, BY 64, R, IG
  TuningDb db("GPU A");
  db.put(record_for(base, "GPU A", {{"block", 256}, {"cols", 8}}));
  const kiln::KernelSpec tuned = kiln::plan_specs(g, true, {}, &db).at(0);
  CHECK(tuned.expression.find(", 8, 32, 32768, 1024>") != std::string::npos);
  CHECK(tuned.name == base.name + "_b256c8");
  for (kiln::Tunables bad : std::vector<kiln::Tunables>{{{"block", 256}, {"cols", 3}},
                                                        {{"block", 1024}, {"cols", 8}},
                                                        {{"block", 256}, {"items", 4}}}) {
    db.put(record_for(base, "GPU A", bad));
    CHECK(kiln::plan_specs(g, true, {}, &db).at(0).expression == base.expression);
  }
}

TEST_CASE(
    "kiln cache explain: a graph's kernels with another GPU's tuning records say they are not "
    "applied") {
  kiln::test::TempDir dir;
  const Graph g = softmax_graph(DType::bf16, 128, 1000);
  g.save(dir / "g.json");
  // A name no GPU has, so that the record is another GPU's on every machine.
  constexpr const char* kOther = "NVIDIA Z1";
  TuningDb other(kOther);
  other.put(record_for(kiln::plan_specs(g).at(0), kOther, {{"block", 64}, {"items", 4}}));
  other.save(dir / "cache");
  const auto r = kiln::test::kiln_cli("cache explain " + (dir / "g.json") + " --arch sm_90a",
                                      "KILN_CACHE_DIR=" + (dir / "cache"));
  CAPTURE(r.output);
  CHECK(r.status == 1);  // nothing compiled yet: a miss
  const std::string here = kiln::test::has_gpu() ? "this GPU is '" : "no GPU here";
  CHECK(r.output.find("a tuning record of '" + std::string(kOther) + "' is not applied: " + here) !=
        std::string::npos);
  CHECK(TuningDb::load_all(dir / "cache").size() == 1);
}

TEST_CASE(
    "gpu: tune_graph measures every candidate, keeps only those matching the default, and its "
    "records run right" *
    doctest::skip(!kiln::test::has_gpu())) {
  kiln::test::TempDir dir;
  kiln::EngineOptions o;
  o.cache_dir = dir.path();
  kiln::Engine e(o);
  std::vector<Graph> graphs;
  graphs.push_back(softmax_graph(DType::f32, 300, 777));
  {
    Graph g;
    auto x = g.input("x", {96, 4096}, DType::bf16);
    g.output(kiln::apply("layer_norm", {x + 1.0, g.input("w", {4096}, DType::bf16),
                                        g.input("b", {4096}, DType::bf16)}) *
             0.5);
    graphs.push_back(g);
  }
  {
    Graph g;
    auto a = g.input("a", {1 << 20}, DType::f16), b = g.input("b", {1 << 20}, DType::f16);
    g.output(kiln::apply("silu", {a * b + 1.0}));
    graphs.push_back(g);
  }
  TuningDb db(e.device_name());
  std::set<std::string> done;
  kiln::autotune::TuneOptions to;
  to.reps = 5;
  int progress = 0;
  to.progress = [&](const std::string&, int, int) { ++progress; };
  int measured = 0;
  for (const Graph& g : graphs) {
    const auto tuned = kiln::autotune::tune_graph(e, g, to, done);
    REQUIRE(tuned.size() == 1);
    const auto& t = tuned[0];
    CAPTURE(t.kernel);
    REQUIRE(t.skipped.empty());
    CHECK(t.candidates >= 2);
    CHECK(t.result.log.size() == std::size_t(t.candidates));  // one line per candidate
    CHECK(t.result.log.at(0).find("(default)") != std::string::npos);
    for (std::size_t i = 1; i < t.result.log.size(); ++i)
      CHECK(t.result.log[i].find("output checked") != std::string::npos);
    CHECK(t.result.winner_us <= t.result.default_us);
    CHECK(t.record.gpu == e.device_name());
    CHECK(t.record.signature == kiln::compiler::spec_id(kiln::plan_specs(g).at(0)));
    measured += t.candidates;
    // Make the second candidate the winner, so the engine below surely runs a tuned kernel.
    kiln::cache::TuningRecord r = t.record;
    r.winner = parse_candidate(t.result.log.at(1));
    CHECK(r.winner.size() == t.result.winner.size());
    db.put(r);
  }
  CHECK(progress == measured);
  // The same graph again: nothing to do.
  CHECK(kiln::autotune::tune_graph(e, graphs[0], to, done).at(0).skipped ==
        "the same kernel was tuned above");
  db.save(dir.path());

  kiln::Engine tuned_engine(o);  // reads the records
  auto rng = kiln::test::make_rng(5);
  for (const Graph& g : graphs)
    for (const auto& f : kiln::test::check_on_gpu(tuned_engine, g, rng)) FAIL_CHECK(f);
  int tuned_kernels = 0;
  for (const auto& k : tuned_engine.kernels())
    tuned_kernels += std::regex_search(k.name, tuned_name);
  CHECK(tuned_kernels == 3);
  o.tuning = false;
  kiln::Engine plain(o);
  for (const auto& f : kiln::test::check_on_gpu(plain, graphs[0], rng)) FAIL_CHECK(f);
  for (const auto& k : plain.kernels()) CHECK_FALSE(std::regex_search(k.name, tuned_name));
}

TEST_CASE(
    "tuner helpers: random inputs in [-3, 3] from a seed; output differences relative, NaN on one "
    "side infinite") {
  using kiln::autotune::max_diff;
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    const auto a = kiln::autotune::random_host(t, 1000, 7),
               b = kiln::autotune::random_host(t, 1000, 7);
    CHECK(a == b);
    CHECK(a != kiln::autotune::random_host(t, 1000, 8));
    double lo = 0, hi = 0;
    for (int i = 0; i < 1000; ++i) {
      const double v = kiln::load_element(t, a.data() + i * kiln::size_of(t));
      lo = std::min(lo, v), hi = std::max(hi, v);
    }
    CHECK(lo >= -3);
    CHECK(lo < -2.5);
    CHECK(hi <= 3);
    CHECK(hi > 2.5);
    CHECK(max_diff(a, b, t) == 0);
  }
  auto bytes = [](DType t, std::vector<double> v) {
    std::vector<unsigned char> h(v.size() * kiln::size_of(t));
    for (std::size_t i = 0; i < v.size(); ++i)
      kiln::store_element(t, v[i], h.data() + i * kiln::size_of(t));
    return h;
  };
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    CAPTURE(kiln::name_of(t));
    CHECK(max_diff(bytes(t, {4, 0.5}), bytes(t, {5, 0.5}), t) ==
          doctest::Approx(0.25));  // relative to |a|
    CHECK(max_diff(bytes(t, {0.25}), bytes(t, {0.5}), t) ==
          doctest::Approx(0.25));  // relative to 1 below it
    CHECK(max_diff(bytes(t, {500, -500, 0.25}), bytes(t, {500, -500, 0.5}), t) ==
          doctest::Approx(0.25 / 333.4).epsilon(0.01));  // to the mean |a|
    CHECK(max_diff(bytes(t, {NAN, 1}), bytes(t, {NAN, 1}), t) == 0);
    CHECK(std::isinf(max_diff(bytes(t, {NAN}), bytes(t, {1}), t)));
    CHECK(std::isinf(max_diff(bytes(t, {1}), bytes(t, {1, 1}), t)));
  }
  // Outputs of millions of values are compared in chunks on several threads: a difference or a
  // lone NaN in any chunk counts, against the mean |a| of all of them.
  for (DType t : {DType::f32, DType::bf16}) {
    CAPTURE(kiln::name_of(t));
    const std::size_t n = 5'000'001, size = kiln::size_of(t);
    std::vector<unsigned char> a(n * size), b;
    for (std::size_t i = 0; i < n; ++i)
      kiln::store_element(t, i < n / 2 ? 4.0 : 2.0, a.data() + i * size);
    b = a;
    CHECK(max_diff(a, b, t) == 0);
    kiln::store_element(t, 3.0, b.data() + (n - 1) * size);  // the last chunk: |2 - 3| / the mean 3
    CHECK(max_diff(a, b, t) == doctest::Approx(1.0 / 3).epsilon(1e-3));
    kiln::store_element(t, NAN, b.data() + n / 3 * size);
    CHECK(std::isinf(max_diff(a, b, t)));
  }
  const auto bits = kiln::autotune::random_host(DType::boolean, 1000, 3);
  CHECK(std::count(bits.begin(), bits.end(), 1) > 400);
  CHECK(std::count(bits.begin(), bits.end(), 0) > 400);
}

TEST_CASE(
    "the tuner's agreement: each output within its dtype's tolerance or the kernel's, "
    "and the message says by how much") {
  // Two outputs back to back: y (f32) and z (bf16), 8 values each, of one fused kernel.
  Graph g;
  const auto x = g.input("x", {8}, DType::f32);
  g.output(kiln::exp(x), "y");
  g.output(kiln::cast(kiln::relu(x), DType::bf16), "z");
  const std::vector<kiln::FusedGroup> groups = kiln::fuse(g, true);
  REQUIRE(groups.size() == 1);
  REQUIRE(groups[0].outputs.size() == 2);
  auto outputs = [](double y0, double z0) {
    std::vector<unsigned char> h(8 * 4 + 8 * 2);
    for (int i = 0; i < 8; ++i) kiln::store_element(DType::f32, i ? 100.0 : y0, h.data() + 4 * i);
    for (int i = 0; i < 8; ++i)
      kiln::store_element(DType::bf16, i ? 1.0 : z0, h.data() + 32 + 2 * i);
    return h;
  };
  const std::vector<unsigned char> want = outputs(100, 1);
  // The default's mean |y| is 100: y's differences count against 100.
  const kiln::autotune::Agree dtype_only = kiln::autotune::agreement(g, groups[0], 0);
  CHECK(dtype_only(outputs(100.005, 1), want) == "");            // 5e-5 of 100
  const std::string why = dtype_only(outputs(100.05, 1), want);  // 5e-4
  CHECK(why.find("its output y differs from the default's by 0.0005") != std::string::npos);
  CHECK(why.find("at most 0.0001 for this f32 kernel") != std::string::npos);
  const kiln::autotune::Agree long_sum = kiln::autotune::agreement(g, groups[0], 1e-3);
  CHECK(long_sum(outputs(100.05, 1), want) == "");
  CHECK(long_sum(outputs(100.5, 1), want).find("by 0.005") != std::string::npos);
  // bf16's own tolerance (1e-2) is the larger: a kernel's smaller allowance does not tighten it.
  CHECK(long_sum(outputs(100, 1.0078125), want) == "");
  CHECK(long_sum(outputs(100, 1.25), want).find("its output z differs") != std::string::npos);
  CHECK(dtype_only(std::vector<unsigned char>(10), want) ==
        "its output has 10 bytes, the default's 48");
}
