// The tuner's core on the CPU: candidates honour the device's limits, and a tuner driven by a
// fake timer picks the fastest candidate whose output matches the default's.
#include "engine/codegen/autotune.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <tuple>
#include <vector>

#include "engine/families/elementwise/elementwise.hpp"
#include "engine/families/rows/rows.hpp"

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

  // Rows of 100 groups of 4: the default keeps 4 groups per thread in 32 threads; no candidate
  // leaves half its threads idle, leaves part of a row uncovered or holds more than 32 values;
  // rows of one warp in registers are also packed 2, 4 and 8 a block.
  const auto rows_space = [](long long groups, int vec, bool clusters) {
    const kiln::RowTunables d = kiln::default_row_tunables(groups, vec);
    return kiln::autotune::rows_space(
        groups, vec, {{"block", d.block}, {"items", d.items}, {"split", 1}, {"pack", 1}},
        clusters);
  };
  const auto rows = rows_space(100, 4, false);
  CHECK(rows.fallback == Candidate{{"block", 32}, {"items", 4}, {"pack", 1}});
  std::vector<std::tuple<int, int, int>> got;
  for (const Candidate& c : rows.candidates(big))
    got.emplace_back(c.at("block"), c.at("items"), c.at("pack"));
  CHECK(got == std::vector<std::tuple<int, int, int>>{{32, 4, 1},
                                                      {32, 0, 1},
                                                      {32, 4, 2},
                                                      {32, 4, 4},
                                                      {32, 4, 8},
                                                      {64, 0, 1},
                                                      {64, 2, 1},
                                                      {128, 0, 1},
                                                      {128, 1, 1}});
  // 32 threads, streaming or 1 group (packed 1, 2, 4 or 8 a block)
  CHECK(rows_space(1, 4, false).candidates(big).size() == 5);
  // Where clusters run, rows gain splits between blocks that do not idle half their threads
  // (6 more for rows of 100 groups: 15), and long rows splits that hold them in registers: f32 x
  // 65536 = 16384 groups of 4.
  CHECK(rows_space(100, 4, true).candidates(big).size() == 15);
  const auto long_rows = rows_space(16384, 4, true);
  std::vector<std::tuple<int, int, int>> split;
  for (const Candidate& c : long_rows.candidates(big))
    if (c.at("split") > 1 && c.at("items") > 0)
      split.emplace_back(c.at("block"), c.at("items"), c.at("split"));
  CHECK(split ==
        std::vector<std::tuple<int, int, int>>{
            {256, 8, 8}, {512, 4, 8}, {512, 8, 4}, {1024, 2, 8}, {1024, 4, 4}, {1024, 8, 2}});
  for (const Candidate& c : rows_space(16384, 4, false).candidates(big))
    CHECK(c.count("split") == 0);
  small.max_threads_per_block = 64;
  for (const Candidate& c : rows.candidates(small)) CHECK(c.at("block") <= 64);
}

TEST_CASE(
    "autotune: the fastest candidate with the default's output wins; wrong ones are discarded") {
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
  const auto same = [](const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
    return a == b ? std::string() : std::string("its output differs");
  };
  const auto r = kiln::autotune::tune(candidates, space.fallback, measure, same);
  CHECK(runs == 20);
  CHECK(kiln::autotune::describe(r.winner) == "block=512 unroll=8");
  CHECK(r.winner_us == doctest::Approx(1000.0 / 32768));
  CHECK(r.default_us == doctest::Approx(1000.0 / 128));  // block 128, unroll 1
  int discarded = 0;
  for (const auto& line : r.log) discarded += line.find("discarded") != std::string::npos;
  CHECK(discarded == 2);
  CHECK(std::count(r.log.begin(), r.log.end(),
                   "block=1024 unroll=8: discarded, its output differs") == 1);
  CHECK(r.log.front().find("(default)") != std::string::npos);

  // Nothing beats the default: it stays.
  const kiln::autotune::Measure slow = [&](const Candidate& c) {
    kiln::autotune::Measurement m;
    m.us = c == space.fallback ? 1.0 : 2.0;
    return m;
  };
  CHECK(kiln::autotune::tune(candidates, space.fallback, slow, same).winner == space.fallback);
}

TEST_CASE("rows: the default keeps rows in registers where they fit, and bad tunables say why") {
  using kiln::RowTunables;
  auto d = [](std::int64_t groups, int vec) {
    const RowTunables t = kiln::default_row_tunables(groups, vec);
    return std::pair<int, int>{t.block, t.items};
  };
  CHECK(d(1, 4) == std::pair<int, int>{32, 1});
  CHECK(d(256, 4) == std::pair<int, int>{64, 4});      // f32 x 1024: 16 values per thread
  CHECK(d(1024, 4) == std::pair<int, int>{256, 4});    // f32 x 4096
  CHECK(d(512, 8) == std::pair<int, int>{128, 4});     // bf16 x 4096: 32 values per thread
  CHECK(d(128, 8) == std::pair<int, int>{32, 4});      // bf16 x 1024
  CHECK(d(4096, 4) == std::pair<int, int>{1024, 4});   // f32 x 16384
  CHECK(d(2048, 8) == std::pair<int, int>{512, 4});    // bf16 x 16384
  CHECK(d(4097, 1) == std::pair<int, int>{288, 16});   // an odd row, scalar loads
  CHECK(d(16384, 4) == std::pair<int, int>{1024, 0});  // f32 x 65536: too long, streams
  CHECK(d(8192, 8) == std::pair<int, int>{1024, 0});
  for (std::int64_t groups : {1, 7, 33, 1000, 4097, 8192, 100000})
    for (int vec : {1, 2, 4, 8}) {
      const RowTunables t = kiln::default_row_tunables(groups, vec);
      CAPTURE(groups);
      CAPTURE(vec);
      CHECK(kiln::reject_row_tunables(t, groups, vec, false) == "");
    }
  CHECK(kiln::reject_row_tunables({48, 1}, 40, 4, true).find("whole warps") != std::string::npos);
  CHECK(kiln::reject_row_tunables({64, 1}, 100, 4, true).find("do not cover") != std::string::npos);
  CHECK(kiln::reject_row_tunables({32, 16}, 512, 4, true).find("at most 32") != std::string::npos);
  CHECK(kiln::reject_row_tunables({1024, 0}, 100, 4, true).find("idle") != std::string::npos);
  CHECK(kiln::reject_row_tunables({512, 4, 0, 3}, 16384, 4, true).find("1, 2, 4 or 8") !=
        std::string::npos);
  CHECK(kiln::reject_row_tunables({512, 4, 0, 8}, 16384, 4, false).find("clusters") !=
        std::string::npos);
  CHECK(kiln::reject_row_tunables({512, 4, 0, 4}, 16384, 4, true).find("do not cover") !=
        std::string::npos);
  CHECK(kiln::reject_row_tunables({512, 4, 0, 8}, 4000, 4, true).find("idle") != std::string::npos);
}

TEST_CASE(
    "rows: where clusters run, rows too long for one block's registers split between the fewest "
    "blocks that stash them") {
  auto s = [](std::int64_t groups, int vec) {
    const kiln::RowTunables t = kiln::split_row_tunables(groups, vec);
    CAPTURE(groups);
    if (t.block) CHECK(kiln::reject_row_tunables(t, groups, vec, true) == "");
    return std::tuple<int, int, int>{t.block, t.items, t.split};
  };
  CHECK(s(16384, 4) == std::tuple<int, int, int>{512, 0, 4});  // f32 x 65536: 64 KiB per block
  CHECK(s(8192, 8) == std::tuple<int, int, int>{256, 4, 8});   // bf16 x 65536: in registers
  CHECK(s(5000, 8) == std::tuple<int, int, int>{160, 4, 8});
  CHECK(s(16384, 8) == std::tuple<int, int, int>{512, 0, 8});  // bf16 x 131072: stashed
  CHECK(s(5000, 4) == std::tuple<int, int, int>{512, 0, 2});
  CHECK(s(32768, 4) == std::tuple<int, int, int>{512, 0, 8});  // f32 x 131072
  CHECK(s(65536, 4) == std::tuple<int, int, int>{0, 0, 1});    // f32 x 262144: streams unsplit
  CHECK(s(40000, 1) == std::tuple<int, int, int>{512, 0, 4});  // odd rows, scalar loads
}
