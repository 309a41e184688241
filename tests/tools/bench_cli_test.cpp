// kiln bench, as a user runs it: one line and exit 1 without a GPU; on a GPU, every kernel of
// the plan timed with the bytes it moves, and the whole plan.
#include <nlohmann/json.hpp>

#include "tests/support.hpp"

using kiln::test::kiln_cli;

namespace {

// A softmax behind a prologue, and a sum over the first axis of its input: two kernels.
const char* kTwo = R"({
  "inputs":  [{"name": "x", "shape": [512, 1000], "dtype": "f32"}],
  "nodes":   [{"name": "t", "op": "mul", "args": ["x", 0.5]},
              {"name": "p", "op": "softmax", "args": ["t"]},
              {"name": "s", "op": "sum", "args": ["x"], "attrs": {"axis": 0}}],
  "outputs": ["p", "s"]
})";

}  // namespace

TEST_CASE("kiln bench without a GPU says so in one line; bad arguments too" *
          doctest::skip(kiln::test::has_gpu())) {
  kiln::test::TempDir tmp;
  kiln::test::write_file(tmp / "g.json", kTwo);
  auto r = kiln_cli("bench " + (tmp / "g.json"));
  CHECK(r.status == 1);
  CHECK(r.output.rfind("kiln: bench: no GPU here", 0) == 0);
  CHECK(r.output.find("to time the 2 kernels") != std::string::npos);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  auto reps = kiln_cli("bench " + (tmp / "g.json") + " --reps 0");
  CHECK(reps.status == 1);
  CHECK(reps.output == "kiln: --reps 0: at least 1\n");
}

TEST_CASE("gpu: kiln bench times every kernel of the plan (bytes, GB/s) and the whole plan" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::test::TempDir tmp;
  kiln::test::write_file(tmp / "g.json", kTwo);
  auto r =
      kiln_cli("bench " + (tmp / "g.json") + " --json --reps 5", "KILN_CACHE_DIR=" + (tmp / "c"));
  CAPTURE(r.output);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.output);
  const auto plan = nlohmann::json::parse(kiln_cli("plan " + (tmp / "g.json") + " --json").output);
  REQUIRE(j["kernels"].size() == 2);
  const std::int64_t n = 512 * 1000 * 4;
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(j["kernels"][i]["name"] == plan["kernels"][i]["name"]);
    CHECK(j["kernels"][i]["ops"] == plan["kernels"][i]["ops"]);
    CHECK(j["kernels"][i]["us"].get<double>() > 0);
  }
  // The sum reads x and writes [1000]; the softmax reads x and writes p.
  CHECK(j["kernels"][0]["bytes"] == n + 1000 * 4);
  CHECK(j["kernels"][1]["bytes"] == 2 * n);
  CHECK(j["plan"]["io_bytes"] == 2 * n + 1000 * 4);
  CHECK(j["plan"]["run_us"].get<double>() > 0);
  CHECK(j["plan"]["replay_us"].get<double>() > 0);
  auto text = kiln_cli("bench " + (tmp / "g.json") + " --reps 3", "KILN_CACHE_DIR=" + (tmp / "c"));
  CHECK(text.output.find("plan: 2 kernels") != std::string::npos);
  // A graph with a dynamic dim cannot be timed: one line.
  std::string dynamic = kTwo;
  dynamic.replace(dynamic.find("[512, 1000]"), 11, "[\"?\", 1000]");
  kiln::test::write_file(tmp / "d.json", dynamic);
  auto d = kiln_cli("bench " + (tmp / "d.json"));
  CHECK(d.status == 1);
  CHECK(d.output.find("dynamic dims") != std::string::npos);
  CHECK(std::count(d.output.begin(), d.output.end(), '\n') == 1);
}
