#pragma once
// The tuner's core, independent of how a candidate is run: a template's tunables and the
// candidates a device can launch, and the choice of the fastest candidate whose output matches
// the default's. Running and timing candidates on a GPU is the caller's `Measure`.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "stages/kernel.hpp"

namespace kiln::autotune {

using Candidate = Tunables;

/// What bounds a launch on one device (read from the driver; defaults are the CUDA minimums).
struct DeviceLimits {
  int max_threads_per_block = 1024;
  int max_shared_bytes_per_block = 48 * 1024;
  int max_registers_per_block = 64 * 1024;
};

struct Tunable {
  std::string name;
  std::vector<int> values;
};

/// A template's tunables, its default, and why a candidate cannot run on a device ("" if it can).
struct Space {
  std::vector<Tunable> tunables;
  Candidate fallback;  ///< the heuristic default
  std::function<std::string(const Candidate&, const DeviceLimits&)> reject;

  /// Every combination of the tunables' values that `reject` accepts, the default first.
  std::vector<Candidate> candidates(const DeviceLimits& limits) const;
};

/// One candidate's run: its output bytes on fixed inputs, and its median time.
struct Measurement {
  std::vector<unsigned char> output;
  double us = 0;
};
using Measure = std::function<Measurement(const Candidate&)>;
/// "" when `got` agrees with `want` (the default's output), else how it differs.
using Agree = std::function<std::string(const std::vector<unsigned char>& got,
                                        const std::vector<unsigned char>& want)>;

struct Result {
  Candidate winner;
  double winner_us = 0;
  double default_us = 0;
  std::vector<std::string> log;  ///< one line per candidate: its time, or why it was discarded
};

/// Measures `space.fallback` first, then every other candidate; one whose output `agree` finds
/// differing from the default's is discarded (and logged with how it differs), as is one whose
/// measurement throws. The fastest of the rest wins; the default keeps its place unless something
/// beats it.
Result tune(const std::vector<Candidate>& candidates, const Candidate& fallback,
            const Measure& measure, const Agree& agree);

/// "block=256 unroll=2"
std::string describe(const Candidate& c);

/// Why candidate `c`'s "block" is more threads than the device allows; "" when it is not: what
/// every family's space rejects first.
std::string block_too_large(const Candidate& c, const DeviceLimits& d);

}  // namespace kiln::autotune
