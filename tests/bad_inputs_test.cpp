// The bad-input corpus: every file of tests/bad_inputs/ (named <ExpectedError>--<what>.json)
// must be refused with that kiln::Error subclass, and by the CLI with one line and exit 1;
// plus bad views, files and bindings given through the API and the CLI. Never a crash,
// never a cache write.
#include <filesystem>

#include "cache/disk_cache.hpp"
#include "tests/support.hpp"
#include "tools/npy.hpp"

namespace {

std::vector<std::filesystem::path> corpus() {
  std::vector<std::filesystem::path> out;
  for (const auto& f :
       std::filesystem::directory_iterator(std::string(KILN_SOURCE_DIR) + "/tests/bad_inputs"))
    out.push_back(f.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The name of the kiln::Error that loading `path` throws ("accepted" if none); its message in
// `message`.
std::string error_kind(const std::string& path, std::string* message = nullptr) {
  try {
    kiln::Graph::load(path);
  } catch (const kiln::Error& e) {
    if (message) *message = e.what();
    if (dynamic_cast<const kiln::GraphError*>(&e)) return "GraphError";
    if (dynamic_cast<const kiln::ShapeError*>(&e)) return "ShapeError";
    if (dynamic_cast<const kiln::DtypeError*>(&e)) return "DtypeError";
    return std::string("other kiln::Error: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("not a kiln::Error: ") + e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("bad inputs: every graph file of the corpus is refused with its typed error") {
  const auto files = corpus();
  CHECK(files.size() >= 50);
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    CAPTURE(name);
    CHECK(error_kind(f.string()) == name.substr(0, name.find("--")));
  }
}

TEST_CASE("bad inputs: every corpus file's error names the file, whatever its type") {
  for (const auto& f : corpus()) {
    std::string message;
    error_kind(f.string(), &message);
    CAPTURE(message);
    CHECK(message.rfind(f.string() + ": ", 0) == 0);
  }
}

TEST_CASE("bad inputs: the CLI refuses every corpus file in one line, exit 1, nothing cached") {
  kiln::test::TempDir tmp;
  for (const auto& f : corpus()) {
    CAPTURE(f.filename().string());
    const auto r =
        kiln::test::kiln_cli("plan --compile " + f.string(), "KILN_CACHE_DIR=" + (tmp / "cache"));
    CHECK(r.status == 1);
    CHECK(r.output.rfind("kiln: ", 0) == 0);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  }
  CHECK_FALSE(std::filesystem::exists(tmp / "cache"));
}

TEST_CASE("bad inputs: views, bindings, files and directories given through the API and the CLI") {
  kiln::test::TempDir tmp;
  kiln::Engine e(kiln::test::offline("sm_90a", tmp / "cache"));
  kiln::TensorView v;
  v.shape = {16};
  v.dtype = kiln::DType::f32;
  SUBCASE("misaligned view") {
    v.data = 0x1001;
    CHECK_THROWS_AS(kiln::precompile(e, "neg", {v}), kiln::ArgumentError);
  }
  SUBCASE("strides of the wrong rank") {
    v.strides = {1, 1};
    CHECK_THROWS_AS(kiln::precompile(e, "neg", {v}), kiln::ShapeError);
  }
  SUBCASE("negative stride") {
    v.strides = {-1};
    CHECK_THROWS_AS(kiln::precompile(e, "neg", {v}), kiln::ShapeError);
  }
  SUBCASE("a view too short for its shape and strides") {
    v.data = 0x100000;
    v.capacity = 60;  // 16 floats need 64 bytes
    CHECK_THROWS_WITH_AS(kiln::precompile(e, "neg", {v}), doctest::Contains("too short"),
                         kiln::ArgumentError);
    v.capacity = 64;
    v.strides = {2};  // every other float: 31 * 4 + 4 bytes
    CHECK_THROWS_WITH_AS(kiln::precompile(e, "neg", {v}), doctest::Contains("reaches 124 bytes"),
                         kiln::ArgumentError);
    v.capacity = 124;
    CHECK_NOTHROW(kiln::precompile(e, "neg", {v}));
  }
  SUBCASE("a plan refuses null, misaligned and too-short views before needing a GPU") {
    kiln::Graph g;
    auto a = g.input("a", {16}, kiln::DType::f32);
    g.output(kiln::silu(a));
    const kiln::Plan p(g);
    CHECK_THROWS_WITH_AS(p.run(e, {{"a", v}}), doctest::Contains("null data pointer"),
                         kiln::ArgumentError);
    v.data = 0x100002;
    CHECK_THROWS_WITH_AS(p.run(e, {{"a", v}}), doctest::Contains("not aligned"),
                         kiln::ArgumentError);
    v.data = 0x100000;
    v.capacity = 32;
    CHECK_THROWS_WITH_AS(p.replay(e, {{"a", v}}),
                         doctest::Contains("input 'a': f32[16] reaches 64 bytes"),
                         kiln::ArgumentError);
    v.capacity = 64;
    kiln::TensorView out = v;
    out.capacity = 16;
    CHECK_THROWS_WITH_AS(p.run(e, {{"a", v}}, {{g.node(g.outputs()[0]).name, out}}),
                         doctest::Contains("too short"), kiln::ArgumentError);
    CHECK_THROWS_AS(p.run(e, {{"a", v}}),
                    kiln::CudaError);  // a fine view: only the missing GPU is left
  }
  SUBCASE("null data on an online run is refused before any launch") {
    CHECK_THROWS_AS(kiln::call_into(e, "neg", v, {v}), kiln::Error);
  }
  SUBCASE("dynamic dims bound inconsistently") {
    kiln::Graph g;
    auto a = g.input("a", {-1, 4}, kiln::DType::f32);
    auto b = g.input("b", {-1, 4}, kiln::DType::f32);
    g.output(a + b);
    kiln::TensorView va = v, vb = v;
    va.shape = {3, 4};
    vb.shape = {5, 4};
    CHECK_THROWS_AS(kiln::Plan(g).run(e, {{"a", va}, {"b", vb}}), kiln::ShapeError);
    vb.shape = {3, 5};
    CHECK_THROWS_AS(kiln::Plan(g).run(e, {{"a", va}, {"b", vb}}), kiln::ShapeError);
    CHECK_THROWS_AS(kiln::Plan(g).run(e, {{"a", va}, {"c", va}}), kiln::GraphError);
  }
  SUBCASE("a cache directory that is a file degrades to memory, no crash") {
    kiln::test::write_file(tmp / "file", "x");
    kiln::Engine f(kiln::test::offline("sm_90a", tmp / "file"));
    CHECK(f.cache_dir().find("not a directory") != std::string::npos);
    CHECK(kiln::precompile(f, "neg", {v}).source == "compiled");
  }
  SUBCASE("kiln run: a wrong-dtype, a malformed and a missing .npy are one-line errors") {
    kiln::test::write_file(tmp / "g.json",
                           R"({"inputs": [{"name": "x", "shape": [4], "dtype": "bf16"}],
      "nodes": [{"name": "y", "op": "neg", "args": ["x"]}], "outputs": ["y"]})");
    kiln::tools::write_npy(tmp / "f32.npy",
                           {{4}, kiln::DType::f32, std::vector<unsigned char>(16)});
    kiln::test::write_file(tmp / "junk.npy", "not numpy");
    for (const std::string& in : {tmp / "f32.npy", tmp / "junk.npy", tmp / "missing.npy"}) {
      const auto r = kiln::test::kiln_cli("run " + (tmp / "g.json") + " --input x=" + in +
                                          " --output-dir " + (tmp / "o"));
      CAPTURE(r.output);
      CHECK(r.status == 1);
      CHECK(r.output.find(in) != std::string::npos);
      CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    }
    const auto none =
        kiln::test::kiln_cli("run " + (tmp / "g.json") + " --output-dir " + (tmp / "o"));
    CHECK(none.output.find("input 'x' was not given") != std::string::npos);
  }
  CHECK(kiln::cache::DiskCache(tmp / "cache").list().size() <=
        1);  // only the good kernel above, if any
}
