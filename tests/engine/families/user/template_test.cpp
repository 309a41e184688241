// Users' templates (include/kiln/template.hpp), on examples/custom_kernel's window.cuh: NVRTC
// compiles them for sm_80 and sm_90a with no GPU; every byte of the template and its headers is
// in the key; KILN_RECORD, `kiln precompile` in another process and a bundle serve them with no
// compile; a bad template is a typed error and leaves nothing in the cache; on a GPU the kernel
// matches its CPU reference for every candidate of its tunables.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <kiln/kiln.hpp>

#include "engine/compiler/compiler.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/tune/tuner.hpp"
#include "tests/support.hpp"

using kiln::DType;

namespace {

const std::string kDir = std::string(KILN_SOURCE_DIR) + "/examples/custom_kernel";

// The example's template, as its graph file declares it (examples/custom_kernel/window.json).
kiln::Template window() {
  return *kiln::Graph::load(kDir + "/window.json").templates().at(0).second;
}

std::vector<kiln::Operand> window_args(std::int64_t n, DType t) {
  const kiln::TensorView v = kiln::test::desc({n}, t);
  return {v, v, double(n), 0.5, 0.25};
}

// Files of the cache directory `dir` other than its bookkeeping (lock files, stats).
int entries(const std::string& dir) {
  int n = 0;
  if (!std::filesystem::exists(dir)) return 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir))
    n += f.is_regular_file() && f.path().extension() == ".kiln";
  return n;
}

}  // namespace

TEST_CASE("templates: a user's template compiles for sm_80 and sm_90a, once") {
  kiln::test::TempDir tmp;
  for (const char* arch : {"sm_80", "sm_90a"}) {
    CAPTURE(arch);
    for (DType t : {DType::f32, DType::bf16, DType::f16}) {
      kiln::Engine e(kiln::test::offline(arch, tmp / "cache"));
      const kiln::KernelRecord r = kiln::precompile(e, window(), window_args(1000, t));
      CHECK(r.source == "compiled");
      CHECK(r.name == fmt::format("gauss_window_{0}_{0}_BLOCK256_ITEMS4", kiln::name_of(t)));
      kiln::Engine again(kiln::test::offline(arch, tmp / "cache"));
      CHECK(kiln::precompile(again, window(), window_args(77, t)).source == "disk");
      CHECK(again.counters().compiles == 0);
    }
  }
}

TEST_CASE("templates: every byte of the template and its headers is in the key") {
  kiln::Engine e(kiln::test::offline("sm_90a"));
  const auto key = [&](const kiln::Template& t, const std::map<std::string, int>& tun) {
    return kiln::precompile(e, t, window_args(1000, DType::f32), tun).key;
  };
  const std::string base = key(window(), {});
  kiln::Template edited = window();
  edited.header("window_math.cuh", edited.headers().at("window_math.cuh") + " ");
  CHECK(key(edited, {}) != base);
  kiln::Template renamed(window().name(), window().source() + "\n");
  renamed.header("window_math.cuh", window().headers().at("window_math.cuh"))
      .params(window().param_list())
      .instance(window().instance_text())
      .tunable("BLOCK", {256})
      .tunable("ITEMS", {4})
      .launch(window().grid(), window().block());
  CHECK(key(renamed, {}) != base);
  CHECK(key(window(), {{"BLOCK", 128}}) != base);
  CHECK(key(window(), {{"BLOCK", 256}, {"ITEMS", 4}}) == base);
}

TEST_CASE("templates: KILN_RECORD, kiln precompile in another process and a bundle serve it") {
  kiln::test::TempDir tmp;
  {
    kiln::Engine rec(kiln::test::offline("sm_90a", tmp / "a", tmp / "manifest.txt"));
    kiln::precompile(rec, window(), window_args(4096, DType::bf16));
  }
  const auto pre = kiln::test::kiln_cli("precompile " + (tmp / "manifest.txt") + " --arch sm_90a",
                                        "KILN_CACHE_DIR=" + (tmp / "b"));
  CHECK(pre.status == 0);
  CHECK(pre.output.find("1 compiled") != std::string::npos);
  const auto pack =
      kiln::test::kiln_cli("cache pack " + (tmp / "t.bundle"), "KILN_CACHE_DIR=" + (tmp / "b"));
  REQUIRE(pack.status == 0);
  kiln::EngineOptions o = kiln::test::offline("sm_90a", tmp / "c");
  o.bundles = {tmp / "t.bundle"};
  kiln::Engine served(o);
  CHECK(kiln::precompile(served, window(), window_args(4096, DType::bf16)).source == "bundle");
  CHECK(served.counters().compiles == 0);
  const auto explain =
      kiln::test::kiln_cli("cache explain " + (tmp / "manifest.txt") + " --arch sm_90a",
                           "KILN_CACHE_DIR=" + (tmp / "b"));
  CHECK(explain.output.find("hit") != std::string::npos);
}

TEST_CASE("templates: a bad template is a typed error and writes nothing to the cache") {
  kiln::test::TempDir tmp;
  kiln::Engine e(kiln::test::offline("sm_90a", tmp / "cache"));
  const auto args = window_args(1000, DType::f32);
  SUBCASE("a syntax error quotes the numbered source") {
    kiln::Template t = window();
    kiln::Template bad(t.name(), t.source() + "\nint broken(;\n");
    bad.header("window_math.cuh", t.headers().at("window_math.cuh"))
        .params(t.param_list())
        .instance(t.instance_text())
        .tunable("BLOCK", {256})
        .tunable("ITEMS", {4})
        .launch(t.grid(), t.block());
    try {
      kiln::precompile(e, bad, args);
      FAIL("compiled");
    } catch (const kiln::CompileError& err) {
      CHECK(std::string(err.what()).find("window.cuh around line") != std::string::npos);
      CHECK(std::string(err.what()).find("int broken(;") != std::string::npos);
    }
  }
  SUBCASE("an instance naming no template, or a name it does not hold") {
    CHECK_THROWS_AS(kiln::precompile(e, window().instance("no_such_kernel<{x}>"), args),
                    kiln::CompileError);
    CHECK_THROWS_AS(kiln::precompile(e, window().instance("gauss_window<{Q}, 1, 1>"), args),
                    kiln::ArgumentError);
    CHECK_THROWS_AS(
        kiln::precompile(e, window().instance("gauss_window<{x}, 1, 1>(); int z"), args),
        kiln::ArgumentError);
  }
  SUBCASE("arguments of the wrong count or type") {
    std::vector<kiln::Operand> few(args.begin(), args.begin() + 3);
    CHECK_THROWS_AS(kiln::precompile(e, window(), few), kiln::ArgumentError);
    std::vector<kiln::Operand> swapped = args;
    swapped[2] = kiln::test::desc({4}, DType::f32);
    CHECK_THROWS_AS(kiln::precompile(e, window(), swapped), kiln::ArgumentError);
    std::vector<kiln::Operand> fractional = args;
    fractional[2] = 10.5;
    CHECK_THROWS_AS(kiln::precompile(e, window(), fractional), kiln::ArgumentError);
    CHECK_THROWS_AS(kiln::precompile(e, window(), args, {{"WARPS", 2}}), kiln::ArgumentError);
  }
  SUBCASE("a launch rule that overflows the grid or the block") {
    CHECK_THROWS_AS(kiln::precompile(e, window().launch({"n * 1e9"}, {"BLOCK"}), args),
                    kiln::ArgumentError);
    CHECK_THROWS_AS(kiln::precompile(e, window().launch({"1"}, {"BLOCK * 8"}), args),
                    kiln::ArgumentError);
    CHECK_THROWS_AS(kiln::precompile(e, window().launch({"n / 3"}, {"BLOCK"}), args),
                    kiln::ArgumentError);
    CHECK_THROWS_AS(kiln::precompile(e, window().launch({"system(1)"}, {"BLOCK"}), args),
                    kiln::ArgumentError);
  }
  SUBCASE("an include that is missing") {
    kiln::Template t = window();
    kiln::Template lost(t.name(), t.source());
    lost.params(t.param_list())
        .instance(t.instance_text())
        .tunable("BLOCK", {256})
        .tunable("ITEMS", {4})
        .launch(t.grid(), t.block());
    CHECK_THROWS_AS(kiln::precompile(e, lost, args), kiln::CompileError);
    CHECK_THROWS_AS(kiln::Template::from_file(tmp / "absent.cuh"), kiln::ArgumentError);
    CHECK_THROWS_AS(window().header("kiln/rows.cuh", "x"), kiln::ArgumentError);
  }
  CHECK(entries(tmp / "cache") == 0);
  CHECK(e.counters().compiles == 0);
}

TEST_CASE("gpu: a user's template matches its CPU reference for every candidate" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(71);
  for (DType t : {DType::f32, DType::bf16}) {
    for (std::int64_t n : {1, 7, 1000, (1 << 20) + 3}) {
      CAPTURE(t);
      CAPTURE(n);
      const std::vector<unsigned char> host =
          kiln::test::random_bytes(t, std::size_t(n), -3, 3, rng);
      const kiln::Tensor x = e.from_host({n}, t, host.data());
      for (int block : {256, 128, 512})
        for (int items : {4, 1, 2}) {
          kiln::Tensor y = e.empty({n}, t);
          y.fill_bytes(0xff);
          kiln::launch(e, window(), {x.view(), y.view(), double(n), 0.5, 0.25},
                       {{"BLOCK", block}, {"ITEMS", items}});
          const std::vector<unsigned char> out = kiln::test::bytes_of(y);
          const std::size_t es = kiln::size_of(t);
          int bad = 0;
          for (std::int64_t i = 0; i < n; ++i) {
            const double v = kiln::load_element(t, &host[std::size_t(i) * es]);
            const double want = v * std::exp(-0.5 * v * v) + 0.25;
            const double got = kiln::load_element(t, &out[std::size_t(i) * es]);
            const double tol = t == DType::f32 ? 1e-5 : 1e-2;
            if (!(std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want))) && ++bad <= 3)
              FAIL_CHECK(fmt::format("block {} items {}: element {}: {} against {}", block, items,
                                     i, got, want));
          }
        }
    }
  }
  kiln::Tensor v = e.empty({8}, DType::f32);
  kiln::TensorView strided = v.view();
  strided.shape = {4};
  strided.strides = {2};
  CHECK_THROWS_AS(kiln::launch(e, window(), {strided, v.view(), 4.0, 0.5, 0.25}),
                  kiln::ArgumentError);
}

namespace {

// softmax(window(silu(x) * 2)) over x [rows, cols]: an elementwise kernel, the template's node,
// then a row op reading its result.
kiln::Graph window_graph(std::int64_t rows, std::int64_t cols, DType t) {
  kiln::Graph g;
  g.define_template("window", window().output("y", "x"));
  auto x = g.input("x", {rows, cols}, t);
  auto y = g.add("window", {kiln::silu(x) * 2.0, double(rows * cols), 0.5, 0.25});
  g.output(kiln::apply("softmax", {y}), "out");
  return g;
}

}  // namespace

TEST_CASE("templates in plans: a node of its own between fused kernels, compiled offline") {
  const kiln::Graph g = window_graph(64, 1000, DType::bf16);
  const kiln::Plan plan(g);
  const std::vector<kiln::PlanKernel> k = plan.kernels("sm_90a");
  REQUIRE(k.size() == 3);
  CHECK(k[1].name == "gauss_window_bf16_bf16_BLOCK256_ITEMS4");
  CHECK(k[1].ops == std::vector<std::string>{g.node(g.find("t3")).name});
  CHECK(k[1].grid == 63);  // ceil(64000 / 1024)
  CHECK(k[1].block == 256);
  kiln::test::TempDir tmp;
  for (const char* arch : {"sm_80", "sm_90a"}) {
    kiln::Engine e(kiln::test::offline(arch, tmp / "cache"));
    CHECK(plan.compile(e).size() == 3);
  }
  // Its arguments are checked as the template's parameters.
  kiln::Graph bad;
  bad.define_template("window", window().output("y", "x"));
  auto x = bad.input("x", {8}, DType::f32);
  CHECK_THROWS_AS(bad.add("window", {x, x, 0.5, 0.25}), kiln::GraphError);
  CHECK_THROWS_AS(bad.add("window", {x, 8.0, 0.5}), kiln::GraphError);
  CHECK_THROWS_AS(bad.define_template("softmax", window().output("y", "x")), kiln::GraphError);
  CHECK_THROWS_AS(bad.define_template("w2", window().output("n", "x")), kiln::GraphError);
  CHECK_THROWS_AS(bad.define_template("w3", window().output("", "")), kiln::GraphError);
}

TEST_CASE("gpu: a template's node runs in a plan, run and replayed, against the reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(73);
  for (DType t : {DType::f32, DType::bf16}) {
    CAPTURE(t);
    const std::int64_t rows = 33, cols = 1000;
    const kiln::Graph g = window_graph(rows, cols, t);
    const kiln::Plan plan(g);
    const std::vector<unsigned char> host =
        kiln::test::random_bytes(t, std::size_t(rows * cols), -3, 3, rng);
    const kiln::Tensor x = e.from_host({rows, cols}, t, host.data());
    const std::size_t es = kiln::size_of(t);
    for (int round = 0; round < 2; ++round) {
      kiln::Tensor out = e.empty({rows, cols}, t);
      out.fill_bytes(0xff);
      if (round == 0)
        plan.run(e, {{"x", x.view()}}, {{"out", out.view()}});
      else
        plan.replay(e, {{"x", x.view()}}, {{"out", out.view()}});
      const std::vector<unsigned char> got = kiln::test::bytes_of(out);
      int bad = 0;
      for (std::int64_t r = 0; r < rows; ++r) {
        // The row in fp64 from the rounded intermediates the plan stores.
        std::vector<double> y(static_cast<std::size_t>(cols));
        double mx = -INFINITY, sum = 0;
        for (std::int64_t c = 0; c < cols; ++c) {
          const double v = kiln::load_element(t, &host[std::size_t(r * cols + c) * es]);
          unsigned char b[4];
          kiln::store_element(t, 2 * v / (1 + std::exp(-v)), b);
          const double s = kiln::load_element(t, b);
          kiln::store_element(t, s * std::exp(-0.5 * s * s) + 0.25, b);
          y[std::size_t(c)] = kiln::load_element(t, b);
          mx = std::max(mx, y[std::size_t(c)]);
        }
        for (double v : y) sum += std::exp(v - mx);
        for (std::int64_t c = 0; c < cols; ++c) {
          const double want = std::exp(y[std::size_t(c)] - mx) / sum;
          const double have = kiln::load_element(t, &got[std::size_t(r * cols + c) * es]);
          const double tol = t == DType::f32 ? 1e-5 : 2e-2;
          if (!(std::fabs(have - want) <= tol * std::max(want, 1.0 / cols)) && ++bad <= 3)
            FAIL_CHECK(
                fmt::format("round {} row {} col {}: {} against {}", round, r, c, have, want));
        }
      }
    }
  }
}

TEST_CASE("gpu: kiln's tuner picks one of a template node's 16 candidates, each checked" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  const kiln::Graph g = window_graph(256, 4096, DType::f32);
  std::set<std::string> done;
  kiln::autotune::TuneOptions o;
  o.reps = 5;
  const std::vector<kiln::autotune::KernelTuning> tuned = kiln::autotune::tune_graph(e, g, o, done);
  REQUIRE(tuned.size() == 3);
  const kiln::autotune::KernelTuning& t = tuned[1];
  CHECK(t.kernel == "gauss_window_f32_f32_BLOCK256_ITEMS4");
  CHECK(t.candidates == 16);
  CHECK(t.skipped.empty());
  CHECK(t.result.log.size() == 16);
  const int block = t.result.winner.at("BLOCK"), items = t.result.winner.at("ITEMS");
  CHECK((block == 128 || block == 256 || block == 512 || block == 1024));
  CHECK((items == 1 || items == 2 || items == 4 || items == 8));
  for (const std::string& line : t.result.log) CHECK(line.find("discarded") == std::string::npos);
}

TEST_CASE("templates in graph JSON: files beside the graph, written back inline, refused typed") {
  const kiln::Graph g = kiln::Graph::load(kDir + "/window.json");
  REQUIRE(g.templates().size() == 1);
  const std::vector<kiln::KernelSpec> specs = kiln::plan_specs(g, true, {}, nullptr, "sm_90a");
  REQUIRE(specs.size() == 3);
  CHECK(specs[1].name == "gauss_window_f32_f32_BLOCK256_ITEMS4");
  CHECK(specs[1].headers.at("window_math.cuh") == window().headers().at("window_math.cuh"));
  const kiln::Graph back = kiln::Graph::parse(g.to_json(), "elsewhere/g.json");
  const std::vector<kiln::KernelSpec> again = kiln::plan_specs(back, true, {}, nullptr, "sm_90a");
  REQUIRE(again.size() == 3);
  CHECK(kiln::compiler::spec_id(again[1]) == kiln::compiler::spec_id(specs[1]));

  const std::string text = kiln::test::read_file(kDir + "/window.json");
  const auto refused = [&](const std::string& from, const std::string& to, const std::string& why) {
    CAPTURE(to);
    std::string edited = text;
    const std::size_t at = edited.find(from);
    REQUIRE(at != std::string::npos);
    edited.replace(at, from.size(), to);
    try {
      kiln::Graph::parse(edited, kDir + "/edited.json");
      FAIL("parsed");
    } catch (const kiln::GraphError& e) {
      CHECK(std::string(e.what()).find(why) != std::string::npos);
    }
  };
  refused("\"file\": \"window.cuh\"", "\"file\": \"../custom_kernel/window.cuh\"", "without '..'");
  refused("\"file\": \"window.cuh\"", "\"file\": \"/etc/hostname\"", "without '..'");
  refused("\"file\": \"window.cuh\"", "\"file\": \"absent.cuh\"", "cannot read");
  refused("\"file\": \"window.cuh\"", "\"file\": \"window.cuh\", \"source\": \"x\"", "one of them");
  refused("\"kind\": \"i64\"", "\"kind\": \"size_t\"", "kind tensor");
  refused("\"grid\":", "\"code\": 1, \"grid\":", "unknown field 'code'");
  refused("\"output\": {\"param\": \"y\", \"like\": \"x\"}",
          "\"output\": {\"param\": \"n\", \"like\": \"x\"}", "not one of its tensor parameters");
  refused("\"instance\": \"gauss_window<{x}, {BLOCK}, {ITEMS}>\"",
          "\"instance\": \"gauss_window<{x}, {BLOCK}, {ITEMS}>; int\"", "no place in a name");
}
