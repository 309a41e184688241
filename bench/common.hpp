#pragma once
// Helpers the benchmark drivers share: random host data, fetching a tensor, comparing outputs
// (the tuner's own, engine/tune/tuner.hpp).
#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <kiln/kiln.hpp>
#include <vector>

#include "engine/tune/tuner.hpp"

namespace kiln::bench {

using autotune::max_diff;
using autotune::random_host;

/// Microseconds per call of `fn` timed the way bench/run.py times PyTorch: the median over
/// `reps` events of 10 back-to-back calls, over 10, so that the host's per-call work overlaps
/// the GPU's as in an app's loop (one call per event would count it whole on every call).
inline double per_call_us(Engine& e, const std::function<void()>& fn, int reps = 20) {
  constexpr int kInner = 10;
  return 1e3 *
         e.time_median_ms(
             [&] {
               for (int i = 0; i < kInner; ++i) fn();
             },
             1, reps) /
         kInner;
}

/// `body`'s exit status; a kiln::Error (no GPU, say) printed as one line, status 1.
inline int guarded(const char* program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
}

/// The engine's compile and cache counters as the last JSON line of a bench's output.
inline void print_jit_counters(const Engine& e) {
  const CacheCounters k = e.counters();
  fmt::print(
      "{{\"jit\": {{\"compiles\": {}, \"compile_ms\": {:.1f}, \"disk_hits\": {}, \"memory_hits\": "
      "{}}}}}\n",
      k.compiles, k.compile_ms, k.disk_hits, k.memory_hits);
}

inline std::vector<unsigned char> fetch(const Tensor& t) {
  std::vector<unsigned char> h(t.bytes());
  t.copy_to_host(h.data());
  return h;
}

}  // namespace kiln::bench
