#include "cache/manifest.hpp"

#include <kiln/graph.hpp>
#include <set>

#include "tests/support.hpp"

TEST_CASE("manifest: an engine records each specialization once; the file reads back") {
  kiln::test::TempDir tmp;
  const kiln::EngineOptions o = kiln::test::offline("sm_90a", "", tmp / "app.manifest");
  kiln::TensorView x;
  x.shape = {128};
  x.dtype = kiln::DType::f16;
  {
    kiln::Engine e(o);
    kiln::precompile(e, "exp", {x});
    kiln::precompile(e, "exp", {x});
    kiln::precompile(e, "mul", {x, 2.0});
  }
  {
    kiln::Engine again(o);  // a second process appends; duplicates are dropped on reading
    kiln::precompile(again, "exp", {x});
  }
  const auto specs = kiln::cache::read_manifest(tmp / "app.manifest");
  REQUIRE(specs.size() == 2);
  CHECK(specs[0].name == "exp_f16__r1v8");
  CHECK(specs[0].source.find("#include <kiln/elementwise.cuh>\n") == 0);
  CHECK(specs[0].source.find("kiln::op::Exp::apply(x[0])") != std::string::npos);
  CHECK(specs[1].source.find("kiln::op::Mul::apply(x[0], s[0])") != std::string::npos);
}

TEST_CASE("manifest: malformed lines name the file and line") {
  kiln::test::TempDir tmp;
  kiln::test::write_file(
      tmp / "m",
      "\n{\"name\": \"a\", \"source\": \"\", \"expression\": \"k\", \"options\": []}\nnot json\n");
  CHECK_THROWS_WITH_AS(kiln::cache::read_manifest(tmp / "m"),
                       doctest::Contains("m:3: not a manifest line"), kiln::ArgumentError);
  kiln::test::write_file(tmp / "m", "{\"name\": \"a\"}\n");
  CHECK_THROWS_AS(kiln::cache::read_manifest(tmp / "m"), kiln::ArgumentError);
  CHECK_THROWS_AS(kiln::cache::read_manifest(tmp / "none"), kiln::ArgumentError);
}

TEST_CASE("manifest: a KILN_RECORD path that cannot be written fails at engine creation") {
  kiln::test::TempDir tmp;
  CHECK_THROWS_WITH_AS(
      kiln::Engine{kiln::test::offline("sm_90a", "", tmp / "missing-dir/app.manifest")},
      doctest::Contains("cannot record into manifest"), kiln::ArgumentError);
}

TEST_CASE(
    "manifest: KILN_RECORD names every kernel a plan asks for, also one whose code an "
    "earlier kernel of another name already loaded") {
  // A transpose's copy and a permute's are one kernel apart from their names: the engine loads
  // it once, and the manifest must still list both, or a bundle built from it misses one.
  kiln::test::TempDir tmp;
  kiln::Engine engine{kiln::test::offline("sm_90a", tmp / "cache", tmp / "app.manifest")};
  kiln::Graph t, p;
  t.output(kiln::apply("transpose", {t.input("x", {40, 24}, kiln::DType::f32)},
                       kiln::Attrs().set("dim0", std::int64_t(0)).set("dim1", std::int64_t(1))),
           "y");
  p.output(kiln::apply("permute", {p.input("x", {40, 24}, kiln::DType::f32)},
                       kiln::Attrs().set("dims", std::vector<std::int64_t>{1, 0})),
           "y");
  const auto a = kiln::Plan(t).compile(engine);
  const auto b = kiln::Plan(p).compile(engine);
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  CHECK(b[0].source == "memory");  // the second plan's kernel is the first's, loaded
  std::set<std::string> names;
  for (const kiln::KernelSpec& s : kiln::cache::read_manifest(tmp / "app.manifest"))
    names.insert(s.name);
  CHECK(names == std::set<std::string>{"transpose_f32__r2v1", "permute_f32__r2v1"});
}
