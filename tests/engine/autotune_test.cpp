// The tuner's core on the CPU: candidates honour the device's limits, and a tuner driven by a
// fake timer picks the fastest candidate whose output matches the default's.
#include <doctest/doctest.h>

#include <stdexcept>

#include "engine/autotune.hpp"

using kiln::autotune::Candidate;

TEST_CASE("autotune: candidates honour the device's limits, the default first") {
  kiln::autotune::DeviceLimits big, small;
  small.max_threads_per_block = 512;
  const auto space = kiln::autotune::elementwise_space();
  const auto all = space.candidates(big), fewer = space.candidates(small);
  CHECK(all.size() == 5 * 4);
  CHECK(fewer.size() == 4 * 4);  // no 1024-thread blocks
  CHECK(all.front() == space.fallback);
  CHECK(fewer.front() == space.fallback);
  for (const Candidate& c : fewer) CHECK(c.at("block") <= 512);

  const auto rows = kiln::autotune::rows_space(100);  // rows of 100 groups
  CHECK(rows.fallback.at("block") == 64);
  std::vector<int> blocks;
  for (const Candidate& c : rows.candidates(big)) blocks.push_back(c.at("block"));
  CHECK(blocks == std::vector<int>{64, 32, 128});  // 256 threads for 100 groups: half would idle
  CHECK(kiln::autotune::rows_space(1).candidates(big).size() == 1);
}

TEST_CASE("autotune: the fastest candidate with the default's output wins; wrong ones are discarded") {
  const auto space = kiln::autotune::elementwise_space();
  const auto candidates = space.candidates({});
  // Fake runs: time falls with block and unroll (1000 / (block * unroll^2) us); block=1024
  // unroll=8 is fastest but wrong, block=512 unroll=1 throws; the fastest correct one is
  // block=512 unroll=8.
  int runs = 0;
  const kiln::autotune::Measure measure = [&](const Candidate& c) {
    ++runs;
    const int b = c.at("block"), u = c.at("unroll");
    if (b == 512 && u == 1) throw std::runtime_error("launch failed");
    kiln::autotune::Measurement m;
    m.output = {1, 2, 3};
    if (b == 1024 && u == 8) m.output = {1, 2, 4};
    m.us = 1000.0 / (b * u * u);
    return m;
  };
  const auto same = [](const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) { return a == b; };
  const auto r = kiln::autotune::tune(candidates, space.fallback, measure, same);
  CHECK(runs == 20);
  CHECK(kiln::autotune::describe(r.winner) == "block=512 unroll=8");
  CHECK(r.winner_us == doctest::Approx(1000.0 / 32768));
  CHECK(r.default_us == doctest::Approx(1000.0 / 1024));
  int discarded = 0;
  for (const auto& line : r.log) discarded += line.find("discarded") != std::string::npos;
  CHECK(discarded == 2);
  CHECK(r.log.front().find("(default)") != std::string::npos);

  // Nothing beats the default: it stays.
  const kiln::autotune::Measure slow = [&](const Candidate& c) {
    kiln::autotune::Measurement m;
    m.us = c == space.fallback ? 1.0 : 2.0;
    return m;
  };
  CHECK(kiln::autotune::tune(candidates, space.fallback, slow, same).winner == space.fallback);
}
