#pragma once
// The row lengths a dynamic-length row op is checked and timed at (tests/engine/
// dynamic_rows_test.cpp, kiln_bench_dynamic): 200 distinct lengths in 1..65536, the edges of
// the vector widths and of the row buckets among them, the rest log-uniform (a fixed seed).

#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

namespace kiln::bench {

inline std::vector<std::int64_t> dynamic_row_lengths() {
  std::set<std::int64_t> lengths = {1,    2,    3,     7,     8,     9,     1023,  1024, 1025,
                                    4095, 4096, 16384, 32767, 32768, 32769, 65535, 65536};
  std::mt19937_64 rng(2026);
  while (lengths.size() < 200) {
    const double u = double(rng() >> 11) * 0x1.0p-53;  // uniform in [0, 1)
    lengths.insert(std::int64_t(std::llround(std::exp(u * std::log(65536.0)))));
  }
  return {lengths.begin(), lengths.end()};
}

}  // namespace kiln::bench
