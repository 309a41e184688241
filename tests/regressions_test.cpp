// Every graph the fuzzer ever shrank (tests/regressions/*.json) runs in the normal suite.
#include <algorithm>
#include <filesystem>

#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

namespace {
std::vector<std::string> regression_files() {
  std::vector<std::string> out;
  for (const auto& f : std::filesystem::directory_iterator(std::string(KILN_SOURCE_DIR) + "/tests/regressions"))
    if (f.path().extension() == ".json") out.push_back(f.path().string());
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST_CASE("regressions: every shrunk fuzz graph plans and compiles for sm_90a") {
  kiln::Engine e(kiln::test::offline("sm_90a"));
  REQUIRE_FALSE(regression_files().empty());
  for (const auto& path : regression_files()) {
    CAPTURE(path);
    CHECK_FALSE(kiln::Plan(kiln::Graph::load(path)).compile(e).empty());
  }
}

TEST_CASE("gpu: regressions: every shrunk fuzz graph matches the reference" * doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e;
  for (const auto& path : regression_files()) {
    CAPTURE(path);
    // seed-N-*.json: the inputs the fuzzer drew for seed N (the ones that failed); else seed 31.
    auto rng = kiln::test::make_rng(31);
    const std::string name = std::filesystem::path(path).filename().string();
    if (name.rfind("seed-", 0) == 0) rng.seed(std::stoull(name.substr(5)));
    for (const auto& f : kiln::test::check_on_gpu(e, kiln::Graph::load(path), rng, true)) FAIL_CHECK(f);
  }
}
