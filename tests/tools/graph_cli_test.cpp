// kiln plan and kiln run, as a user runs them.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "tests/support.hpp"
#include "tools/npy.hpp"

using kiln::test::kiln_cli;

namespace {

// 6 elementwise ops in a chain with a broadcast input: one kernel.
const char* kChain = R"({
  "inputs":  [{"name": "x", "shape": [32, 256], "dtype": "bf16"},
              {"name": "b", "shape": [256], "dtype": "bf16"}],
  "nodes":   [{"name": "t", "op": "mul", "args": ["x", 2.0]},
              {"name": "u", "op": "add", "args": ["t", "b"]},
              {"name": "v", "op": "tanh", "args": ["u"]},
              {"name": "w", "op": "clamp", "args": ["v"], "attrs": {"min": -0.5}},
              {"name": "s", "op": "silu", "args": ["w"]},
              {"name": "y", "op": "sub", "args": ["s", "x"]}],
  "outputs": ["y"]
})";

}  // namespace

TEST_CASE(
    "kiln plan: a chain of 6 elementwise ops prints exactly one kernel; --compile works without a "
    "GPU") {
  kiln::test::TempDir tmp;
  kiln::test::write_file(tmp / "g.json", kChain);
  auto plan = kiln_cli("plan " + (tmp / "g.json"));
  CHECK(plan.status == 0);
  CHECK(plan.output.find("\n1 kernel for 6 nodes\n") != std::string::npos);  // inputs are no nodes
  CHECK(plan.output.find("fuses t u v w s y") != std::string::npos);
  auto json = kiln_cli("plan " + (tmp / "g.json") + " --json");
  CHECK(json.output.find(R"("ops":["t","u","v","w","s","y"])") != std::string::npos);
  CHECK(kiln_cli("plan " + (tmp / "g.json") + " --no-fuse").output.find("6 kernels") !=
        std::string::npos);
  auto compiled = kiln_cli("plan " + (tmp / "g.json") + " --compile --arch sm_80,sm_90a",
                           "KILN_CACHE_DIR=" + (tmp / "c"));
  CHECK(compiled.status == 0);
  CHECK(compiled.output.find("for sm_80: compiled") != std::string::npos);
  CHECK(compiled.output.find("for sm_90a: compiled") != std::string::npos);
  CHECK(compiled.output.find(" registers, 0 bytes spilled)") !=
        std::string::npos);  // ptxas's counts
}

TEST_CASE(
    "kiln plan of a graph with dynamic dims: a batch's kernels by name, grids '?'; others "
    "'__buckets' or '__dynamic'") {
  kiln::test::TempDir tmp;
  std::string batch = kChain;
  batch.replace(batch.find("[32, 256]"), 9, R"(["?", 256])");
  kiln::test::write_file(tmp / "b.json", batch);
  auto plan = kiln_cli("plan " + (tmp / "b.json"));
  CHECK(plan.status == 0);
  CHECK(plan.output.find("mul_add_tanh_3_more_bf16__r2v8") !=
        std::string::npos);  // as for [32, 256]
  CHECK(plan.output.find("grid       ? block  128") != std::string::npos);
  // A dynamic row length takes a kernel per bucket of lengths, its block the launch's.
  kiln::test::write_file(tmp / "r.json",
                         R"({"inputs": [{"name": "x", "shape": [4, "?"], "dtype": "f32"}],
    "nodes": [{"name": "y", "op": "softmax", "args": ["x"]}], "outputs": ["y"]})");
  auto buckets = kiln_cli("plan " + (tmp / "r.json"));
  CHECK(buckets.status == 0);
  CHECK(buckets.output.find("softmax_f32__buckets") != std::string::npos);
  CHECK(buckets.output.find("grid       ? block    ?") != std::string::npos);
  // A dynamic reduced batch is the kernel's: a kernel per extent.
  kiln::test::write_file(tmp / "c.json",
                         R"({"inputs": [{"name": "x", "shape": ["?", 64], "dtype": "f32"}],
    "nodes": [{"name": "y", "op": "sum", "args": ["x"], "attrs": {"axis": 0}}], "outputs": ["y"]})");
  auto per_extent = kiln_cli("plan " + (tmp / "c.json"));
  CHECK(per_extent.status == 0);
  CHECK(per_extent.output.find("sum_f32__dynamic") != std::string::npos);
  // It cannot be compiled ahead: the error after the plan names the file, as a load's would.
  auto ahead = kiln_cli("plan --compile --arch sm_80 " + (tmp / "c.json") + " --cache-dir " +
                        (tmp / "cache"));
  CHECK(ahead.status == 1);
  CHECK(ahead.err.rfind("kiln: " + (tmp / "c.json") + ": kernel sum_f32__dynamic", 0) == 0);
  // A dynamic input that no kernel reads leaves every grid static.
  kiln::test::write_file(tmp / "u.json",
                         R"({"inputs": [{"name": "x", "shape": [4, 64], "dtype": "f32"},
    {"name": "unused", "shape": ["?", 3], "dtype": "f32"}],
    "nodes": [{"name": "y", "op": "exp", "args": ["x"]}], "outputs": ["y"]})");
  auto unused = kiln_cli("plan " + (tmp / "u.json"));
  CAPTURE(unused.output);
  CHECK(unused.status == 0);
  CHECK(unused.output.find("grid       ?") == std::string::npos);
  CHECK(unused.output.find("grid       1 block") != std::string::npos);
}

TEST_CASE("kiln plan --compile: a kernel NVRTC rejects shows its log's first lines and its file") {
  kiln::test::TempDir tmp;
  kiln::test::write_file(tmp / "bad.cuh", R"(template <class T, int B>
__global__ void bad_kernel(const T* x, T* y, long n) {
  y[0] = undefined_thing;
}
)");
  kiln::test::write_file(tmp / "t.json", R"({"templates": [{"name": "badop", "file": "bad.cuh",
    "params": [{"name": "x", "kind": "tensor"}, {"name": "y", "kind": "tensor"},
               {"name": "n", "kind": "i64"}],
    "instance": "bad_kernel<{x}, 256>", "grid": ["1"], "block": ["256"],
    "output": {"param": "y", "like": "x"}}],
  "inputs": [{"name": "x", "shape": [64], "dtype": "f32"}],
  "nodes": [{"name": "w", "op": "badop", "args": ["x", 64]}], "outputs": ["w"]})");
  const auto r =
      kiln_cli("plan --compile --arch sm_80 " + (tmp / "t.json") + " --cache-dir " + (tmp / "c"));
  CAPTURE(r.err);
  CHECK(r.status == 1);
  CHECK(r.err.rfind("kiln: NVRTC could not compile kernel bad_kernel_f32_f32 for sm_80", 0) == 0);
  CHECK(r.err.find("\n  bad.cuh(3): error: identifier \"undefined_thing\" is undefined\n") !=
        std::string::npos);
  const std::string lead = "  the full log, with the source around each error: ";
  const auto at = r.err.find(lead);
  REQUIRE(at != std::string::npos);
  const std::string path = r.err.substr(at + lead.size(), r.err.find('\n', at) - at - lead.size());
  const std::string full = kiln::test::read_file(path);
  std::remove(path.c_str());
  CHECK(full.find(">    3 |   y[0] = undefined_thing;") != std::string::npos);
  CHECK(full.find("options: ") != std::string::npos);
  // kiln precompile names the kernel and arch, and shows the same.
  const auto pre =
      kiln_cli("precompile --arch sm_80 " + (tmp / "t.json") + " --cache-dir " + (tmp / "c"));
  CAPTURE(pre.err);
  CHECK(pre.status == 1);
  CHECK(pre.err.find("failed: bad_kernel_f32_f32 for sm_80: NVRTC could not compile") !=
        std::string::npos);
  CHECK(pre.err.find("\n  bad.cuh(3): error: identifier \"undefined_thing\" is undefined\n") !=
        std::string::npos);
  const auto pre_at = pre.err.find(lead);
  REQUIRE(pre_at != std::string::npos);
  std::remove(
      pre.err.substr(pre_at + lead.size(), pre.err.find('\n', pre_at) - pre_at - lead.size())
          .c_str());
}

TEST_CASE("kiln plan and run: a bad graph file is a one-line error naming the node") {
  kiln::test::TempDir tmp;
  std::string broken = kChain;
  broken.replace(broken.find("\"tanh\""), 6, "\"tanx\"");
  kiln::test::write_file(tmp / "bad.json", broken);
  auto r = kiln_cli("plan " + (tmp / "bad.json"));
  CHECK(r.status == 1);
  CHECK(r.output.find("node 'v': field op: unknown op 'tanx'") != std::string::npos);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(kiln_cli("plan " + (tmp / "missing.json")).status == 1);
}

namespace {
const std::string kSpectral = std::string(KILN_BINARY_DIR) + "/bin/spectral_autoencoder";
}  // namespace

TEST_CASE("spectral_autoencoder --offline --save-graphs DIR writes the graphs that kiln reads" *
          doctest::skip(!std::filesystem::exists(kSpectral))) {  // examples built
  kiln::test::TempDir tmp;
  const std::string cmd = "KILN_CACHE_DIR=" + (tmp / "c") + " " + kSpectral +
                          " --offline --arch sm_80 --save-graphs " + tmp.path() + " >" +
                          (tmp / "out") + " 2>&1";
  CHECK(std::system(cmd.c_str()) == 0);
  CAPTURE(kiln::test::read_file(tmp / "out"));
  for (const char* batch : {"1", "1024"}) {
    const auto plan = kiln_cli("plan " + (tmp / "spectral_autoencoder_") + batch + ".json");
    CHECK(plan.status == 0);
    CHECK(plan.output.find("\n6 kernels for 10 nodes\n") != std::string::npos);
  }
}

TEST_CASE("kiln run without a GPU says so in one line" * doctest::skip(kiln::test::has_gpu())) {
  kiln::test::TempDir tmp;
  kiln::test::write_file(tmp / "g.json", kChain);
  kiln::tools::write_npy(tmp / "x.npy",
                         {{32, 256}, kiln::DType::bf16, std::vector<unsigned char>(32 * 256 * 2)});
  kiln::tools::write_npy(tmp / "b.npy",
                         {{256}, kiln::DType::bf16, std::vector<unsigned char>(256 * 2)});
  auto r = kiln_cli("run " + (tmp / "g.json") + " --input x=" + (tmp / "x.npy") +
                    " --input b=" + (tmp / "b.npy") + " --output-dir " + tmp.path());
  CHECK(r.status == 1);
  CHECK(r.output.rfind("kiln: run: no GPU here", 0) == 0);
  CHECK(r.output.find("kiln plan --compile") !=
        std::string::npos);  // the CLI's way, not the C++ API's
  CHECK(r.output.find("EngineOptions") == std::string::npos);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
}

TEST_CASE(".npy files: round trip, and a wrong dtype is refused") {
  kiln::test::TempDir tmp;
  kiln::tools::NpyArray a{{3, 5}, kiln::DType::bf16, std::vector<unsigned char>(30)};
  for (std::size_t i = 0; i < a.bytes.size(); ++i) a.bytes[i] = static_cast<unsigned char>(i * 7);
  kiln::tools::write_npy(tmp / "a.npy", a);
  const auto back = kiln::tools::read_npy(tmp / "a.npy", kiln::DType::bf16);
  CHECK(back.shape == a.shape);
  CHECK(back.bytes == a.bytes);
  CHECK_THROWS_WITH_AS(kiln::tools::read_npy(tmp / "a.npy", kiln::DType::f32),
                       doctest::Contains("dtype <u2 but the graph input is f32"),
                       kiln::ArgumentError);
  kiln::test::write_file(tmp / "junk.npy", "junk");
  CHECK_THROWS_AS(kiln::tools::read_npy(tmp / "junk.npy", kiln::DType::f32), kiln::ArgumentError);
}

TEST_CASE(".npy files of integers are NumPy's int32 and int64 ('<i4', '<i8')") {
  kiln::test::TempDir tmp;
  const std::vector<std::int64_t> v = {-1, 0, std::int64_t(1) << 40, -(std::int64_t(1) << 62)};
  kiln::tools::NpyArray a{{4}, kiln::DType::i64, std::vector<unsigned char>(32)};
  std::memcpy(a.bytes.data(), v.data(), 32);
  kiln::tools::write_npy(tmp / "a.npy", a);
  const std::string file = kiln::test::read_file(tmp / "a.npy");
  CHECK(file.find("'descr': '<i8'") != std::string::npos);
  CHECK(file.substr(file.size() - 32) == std::string(a.bytes.begin(), a.bytes.end()));
  CHECK(kiln::tools::read_npy(tmp / "a.npy", kiln::DType::i64).bytes == a.bytes);
  CHECK_THROWS_WITH_AS(kiln::tools::read_npy(tmp / "a.npy", kiln::DType::i32),
                       doctest::Contains("dtype <i8 but the graph input is i32 (expected <i4)"),
                       kiln::ArgumentError);
}

TEST_CASE("gpu: kiln run reads .npy inputs and writes .npy outputs" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::test::TempDir tmp;
  kiln::test::write_file(tmp / "g.json", kChain);
  kiln::tools::NpyArray x{{32, 256}, kiln::DType::bf16, std::vector<unsigned char>(32 * 256 * 2)};
  kiln::tools::NpyArray b{{256}, kiln::DType::bf16, std::vector<unsigned char>(256 * 2)};
  for (std::size_t i = 0; i < 32 * 256; ++i)
    kiln::store_element(kiln::DType::bf16, double(i % 17) * 0.1 - 0.8, x.bytes.data() + 2 * i);
  for (std::size_t i = 0; i < 256; ++i)
    kiln::store_element(kiln::DType::bf16, double(i % 5) * 0.2, b.bytes.data() + 2 * i);
  kiln::tools::write_npy(tmp / "x.npy", x);
  kiln::tools::write_npy(tmp / "b.npy", b);
  auto r = kiln_cli("run " + (tmp / "g.json") + " --input x=" + (tmp / "x.npy") +
                        " --input b=" + (tmp / "b.npy") + " --output-dir " + (tmp / "out"),
                    "KILN_CACHE_DIR=" + (tmp / "c"));
  CHECK(r.status == 0);
  const auto y = kiln::tools::read_npy(tmp / "out/y.npy", kiln::DType::bf16);
  REQUIRE(y.shape == kiln::Shape{32, 256});
  for (std::size_t i = 0; i < 32 * 256; i += 37) {
    const double xv = kiln::load_element(kiln::DType::bf16, x.bytes.data() + 2 * i);
    const double bv = kiln::load_element(kiln::DType::bf16, b.bytes.data() + 2 * (i % 256));
    const double w = std::max(std::tanh(2 * xv + bv), -0.5);
    const double want = w / (1 + std::exp(-w)) - xv;
    CHECK(kiln::load_element(kiln::DType::bf16, y.bytes.data() + 2 * i) ==
          doctest::Approx(want).epsilon(0.02).scale(1.0));
  }
}
