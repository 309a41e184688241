// group_norm over a channels_last x as one cooperative launch (engine/families/rows/
// group_rows.cpp), chosen by a tuning record's `grouped`: its plan, its compile with nothing
// spilled, and on the GPU against the fp64 model, fused and with a residual handed on.
#include <fmt/format.h>

#include <kiln/graph.hpp>
#include <kiln/ops.hpp>
#include <regex>
#include <set>

#include "cache/tuning.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/exec/plan_specs.hpp"
#include "tests/engine/cases.hpp"
#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::DType;
using kiln::Graph;
using kiln::Shape;

namespace {

// silu(group_norm(x + t, w, b)) over a channels_last x, t per (n, c); with `residual` x + r (r
// channels_last too) is also an output, the norm handing its prologue's value on.
Graph grouped_graph(const Shape& s, std::int64_t G, DType t, bool residual) {
  Graph g;
  auto x = kiln::test::nchw(g, s, t, true);
  Shape ts = {s[0], s[1]};
  ts.resize(s.size(), 1);
  kiln::Value h = residual ? x + kiln::test::nchw(g, s, t, true, "r") : x + g.input("t", ts, t);
  if (residual) g.output(h, "h");
  auto w = g.input("w", {s[1]}, t), b = g.input("b", {s[1]}, DType::f32);
  g.output(kiln::silu(kiln::apply("group_norm", {h, w, b}, kiln::Attrs().set("groups", G))),
           "y");
  return g;
}

// A record of `gpu` that runs every group_norm kernel of `g` grouped: those of its plan with
// outputs as it makes them, and with row-major outputs (a channels_last y written row-major is
// another kernel).
using Views = std::map<std::string, kiln::TensorView>;

// `g`'s outputs as row-major views (no strides: contiguous).
Views row_major_outputs(const Graph& g) {
  Views out;
  for (int o : g.outputs()) {
    kiln::TensorView& v = out[g.node(o).name];
    v.shape = g.node(o).shape;
    v.dtype = g.node(o).dtype;
  }
  return out;
}

kiln::cache::TuningDb grouped_records(const Graph& g, const std::string& gpu) {
  kiln::cache::TuningDb db(gpu);
  for (const Views& views : {Views{}, row_major_outputs(g)})
    for (const kiln::KernelSpec& s : kiln::plan_specs(g, true, views))
      if (s.name.find("group_norm") != std::string::npos)
        db.put(kiln::test::tuning_record(gpu, kiln::compiler::spec_id(s), {{"grouped", 1}}, 1));
  return db;
}

struct Case {
  Shape shape;
  std::int64_t groups;
};
// Images of one block and of many (the last one short), groups of 1 to C channels, rank 3.
// The first is not run with a residual: that output stays NCHW (a graph output of an
// elementwise op is row-major), one value a load, too few for the GPU's registers to hold.
const std::vector<Case> kCases = {{{2, 320, 64, 64}, 32}, {{2, 64, 7, 9}, 32}, {{1, 6, 3, 1}, 6},
                                  {{3, 4, 9}, 1},         {{1, 320, 16, 24}, 32}};

}  // namespace

TEST_CASE("group_norm grouped: a record's grouped plans one cooperative kernel that compiles "
          "with nothing spilled; without it the row template runs") {
  kiln::Engine e(kiln::test::offline("sm_90a"));
  const Graph g = grouped_graph({2, 320, 64, 64}, 32, DType::f16, false);
  REQUIRE(kiln::plan_specs(g).size() == 1);
  CHECK(kiln::plan_specs(g)[0].name.find("__grouped") == std::string::npos);
  const kiln::cache::TuningDb db = grouped_records(g, "GPU A");
  const auto specs = kiln::plan_specs(g, true, {}, &db);
  REQUIRE(specs.size() == 1);
  // 4096 pixels x 320 channels an image: blocks of 960 threads, 6 groups of 4 a thread (the f32
  // bias reads 16 bytes at a time; 72 pixels a block), 57 blocks an image, all on the 132
  // multiprocessors at once.
  CHECK(specs[0].name.find("__grouped3v4b960m1i6p57") != std::string::npos);
  for (DType t : kiln::kFloatDTypes)
    for (const Case& c : kCases)
      for (bool residual : {false, true}) {
        if (residual && &c == &kCases[0]) continue;
        const Graph h = grouped_graph(c.shape, c.groups, t, residual);
        CAPTURE(h.to_json());
        const kiln::cache::TuningDb records = grouped_records(h, "GPU A");
        std::set<std::string> compiled;  // with a residual, y is row-major either way
        for (const Views& views : {Views{}, row_major_outputs(h)}) {
          // A row-major y of the first case: one value a load, too many for the registers.
          if (!views.empty() && &c == &kCases[0]) continue;
          for (const kiln::KernelSpec& s : kiln::plan_specs(h, true, views, &records)) {
            CHECK(s.name.find("__grouped") != std::string::npos);
            if (compiled.insert(kiln::compiler::spec_id(s)).second)
              CHECK(kiln::compiler::compile(s, "sm_90a").spill_bytes == 0);
          }
        }
      }
}

TEST_CASE("plan_specs: outputs given as views are planned as a run given them writes them") {
  // y = silu(group_norm(x + t)) of a channels_last x: made channels_last, 2 channels a load; a
  // row-major y given is another kernel, one value a load.
  const Graph g = grouped_graph({2, 64, 7, 9}, 32, DType::f16, false);
  const auto made = kiln::plan_specs(g), given = kiln::plan_specs(g, true, row_major_outputs(g));
  REQUIRE(made.size() == 1);
  REQUIRE(given.size() == 1);
  CHECK(made[0].name == "add__group_norm__silu_f16__r4v2");
  CHECK(given[0].name == "add__group_norm__silu_f16__r4v1");
  Views wrong = row_major_outputs(g);
  wrong["y"].shape = {2, 64, 7, 8};
  CHECK_THROWS_WITH_AS(kiln::plan_specs(g, true, wrong),
                       doctest::Contains("output 'y': view"), kiln::ShapeError);
}

TEST_CASE("gpu: group_norm grouped (a tuning record's grouped) matches the fp64 model" *
          doctest::skip(!kiln::test::has_gpu())) {
  auto rng = kiln::test::make_rng(53);
  int grouped = 0;
  std::vector<std::string> missed;
  for (DType t : kiln::kFloatDTypes)
    for (const Case& c : kCases)
      for (bool residual : {false, true}) {
        if (residual && &c == &kCases[0]) continue;
        const Graph g = grouped_graph(c.shape, c.groups, t, residual);
        CAPTURE(g.to_json());
        kiln::test::TempDir tmp;
        kiln::EngineOptions o;
        o.cache_dir = tmp.path();
        grouped_records(g, kiln::Engine(o).device_name()).save(tmp.path());
        kiln::Engine e(o);
        // y in the plan's memory order (channels_last): a row-major y of the first case, one
        // value a load, does not fit the GPU's registers at once.
        for (const auto& f : kiln::test::check_on_gpu(e, g, rng, false, nullptr, true))
          FAIL_CHECK(f);
        bool any = false;
        for (const auto& k : e.kernels()) any |= k.name.find("__grouped") != std::string::npos;
        grouped += any;
        if (!any)
          missed.push_back(fmt::format("{} {}{}: {}", kiln::name_of(t), kiln::to_string(c.shape),
                                       residual ? " with a residual" : "",
                                       kiln::plan_specs(g)[0].name));
      }
  std::string list;
  for (const std::string& m : missed) list += "\n  " + m;
  MESSAGE(fmt::format("{} graphs ran a grouped kernel; these did not:{}", grouped, list));
  CHECK(missed.empty());
}
