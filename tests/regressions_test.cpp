// Every graph the fuzzer ever shrank (tests/regressions/*.json) runs in the normal suite; the
// graphs that scripts/device-test.sh runs under compute-sanitizer (tests/sanitize*/*.json) are
// checked to still reach the kernels they are there for.
#include <algorithm>
#include <filesystem>
#include <regex>

#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

namespace {
std::vector<std::string> graph_files(const std::string& folder) {
  std::vector<std::string> out;
  for (const auto& f :
       std::filesystem::directory_iterator(std::string(KILN_SOURCE_DIR) + "/tests/" + folder))
    if (f.path().extension() == ".json") out.push_back(f.path().string());
  std::sort(out.begin(), out.end());
  return out;
}
std::vector<std::string> regression_files() { return graph_files("regressions"); }
}  // namespace

TEST_CASE("regressions: every shrunk fuzz graph plans and compiles for sm_90a") {
  kiln::Engine e(kiln::test::offline("sm_90a"));
  REQUIRE_FALSE(regression_files().empty());
  for (const auto& path : regression_files()) {
    CAPTURE(path);
    CHECK_FALSE(kiln::Plan(kiln::Graph::load(path)).compile(e).empty());
  }
}

TEST_CASE("gpu: regressions: every shrunk fuzz graph matches the reference" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  for (const auto& path : regression_files()) {
    CAPTURE(path);
    // seed-N-*.json: the inputs the fuzzer drew for seed N (the ones that failed); else seed 31.
    auto rng = kiln::test::make_rng(31);
    const std::string name = std::filesystem::path(path).filename().string();
    if (name.rfind("seed-", 0) == 0) rng.seed(std::stoull(name.substr(5)));
    for (const auto& f : kiln::test::check_on_gpu(e, kiln::Graph::load(path), rng, true))
      FAIL_CHECK(f);
  }
}

TEST_CASE("sanitize graphs: each splits its rows between the blocks of a cluster on sm_90a") {
  // device-test.sh sanity runs these under racecheck and memcheck for the cluster merge
  // (row_reduce.cuh); a graph that stopped splitting would check nothing there.
  kiln::Engine e(kiln::test::offline("sm_90a"));
  const auto files = graph_files("sanitize");
  REQUIRE(files.size() >= 4);
  int registers_kept = 0;
  for (const auto& path : files) {
    CAPTURE(path);
    const kiln::Plan plan(kiln::Graph::load(path));
    const auto kernels = plan.kernels("sm_90a");
    REQUIRE(kernels.size() == 1);
    CHECK(std::regex_search(kernels[0].name, std::regex("__r2v[148]s[2-8]$")));
    for (const auto& k : plan.compile(e)) {
      CHECK(k.spill_bytes == 0);
      registers_kept += k.registers > 0;
      // Its weight and bias are staged in shared memory (rows.cuh, Staged): at the 48 registers
      // of the unstaged kernel, not the 64 that ptxas takes when the kernel asks no minimum.
      if (path.find("ln_bf16_8x65536") != std::string::npos) CHECK(k.registers <= 48);
    }
  }
  CHECK(registers_kept == int(files.size()));
}

TEST_CASE("GEMM sanitize graphs: each is one wgmma kernel on sm_90a, the f32 split one along K") {
  // device-test.sh sanity runs these under racecheck and memcheck: the f32 stages split in
  // shared memory before wgmma reads them (gemm_sm90.cuh), the DSMEM sum of a split, the
  // column windows of several outputs (QKV), and persistent blocks of more than one tile each
  // (more tiles than an H100's 132 SMs).
  kiln::Engine e(kiln::test::offline("sm_90a"));
  const auto files = graph_files("sanitize_gemm");
  REQUIRE(files.size() >= 3);
  for (const auto& path : files) {
    CAPTURE(path);
    const kiln::Plan plan(kiln::Graph::load(path));
    const auto kernels = plan.kernels("sm_90a");
    REQUIRE(kernels.size() == 1);
    CHECK(kernels[0].name.find("__wg128x") != std::string::npos);
    if (path.find("_f32_split_") != std::string::npos)
      CHECK(std::regex_search(kernels[0].name, std::regex("s4k[24]_kk")));
    else if (path.find("_f32_") != std::string::npos)  // exact, persistent, 64 columns a tile
      CHECK(kernels[0].name.find("__wg128x64s4_kk") != std::string::npos);
    for (const auto& k : plan.compile(e)) CHECK(k.spill_bytes == 0);
  }
}

TEST_CASE("attention sanitize graphs: each is one kernel on the path its name says, on sm_90a") {
  // device-test.sh sanity runs these under racecheck, memcheck and synccheck: the wgmma path's
  // barriers and persistent items, the decode path's warp, cluster and chunk merges, the mma
  // path's masks; those with an lse output check its stores too (one kernel writes both).
  const auto files = graph_files("sanitize_attention");
  REQUIRE(files.size() >= 6);
  int with_lse = 0;
  for (const auto& path : files) {
    CAPTURE(path);
    const kiln::Graph g = kiln::Graph::load(path);
    const auto kernels = kiln::Plan(g).kernels("sm_90a");
    REQUIRE(kernels.size() == 1);
    const std::string file = std::filesystem::path(path).filename().string();
    const char* path_of = file.find("_wgmma_") != std::string::npos    ? "__wg128x"
                          : file.find("_decode_") != std::string::npos ? "__dec"
                                                                       : "__fa";
    CHECK(kernels[0].name.find(path_of) != std::string::npos);
    if (file.find("_chunks_") != std::string::npos)
      CHECK(std::regex_search(kernels[0].name, std::regex("k[0-9]c[0-9]")));
    for (int o : g.outputs()) {  // besides q's producers, computed as it loads q
      const auto& ops = kernels[0].ops;
      CHECK(std::find(ops.begin(), ops.end(), g.node(o).name) != ops.end());
    }
    with_lse += g.outputs().size() == 2;
  }
  CHECK(with_lse >= 3);
}
