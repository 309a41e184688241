#include "engine/codegen/autotune.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

namespace kiln::autotune {

std::string block_too_large(const Candidate& c, const DeviceLimits& d) {
  const int block = c.at("block");
  if (block <= d.max_threads_per_block) return "";
  return fmt::format("{} threads per block, the device allows {}", block, d.max_threads_per_block);
}

std::string describe(const Candidate& c) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : c) parts.push_back(fmt::format("{}={}", name, value));
  return fmt::format("{}", fmt::join(parts, " "));
}

std::vector<Candidate> Space::candidates(const DeviceLimits& limits) const {
  std::vector<Candidate> out = {{}};
  for (const Tunable& t : tunables) {
    std::vector<Candidate> next;
    for (const Candidate& c : out)
      for (int v : t.values) {
        Candidate d = c;
        d[t.name] = v;
        next.push_back(std::move(d));
      }
    out = std::move(next);
  }
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const Candidate& c) { return !reject(c, limits).empty(); }),
            out.end());
  auto it = std::find(out.begin(), out.end(), fallback);
  if (it != out.end()) std::rotate(out.begin(), it, it + 1);
  return out;
}

Result tune(const std::vector<Candidate>& candidates, const Candidate& fallback,
            const Measure& measure, const Agree& agree) {
  Result r;
  const Measurement base = measure(fallback);  // the default must run: no reference otherwise
  r.winner = fallback;
  r.winner_us = r.default_us = base.us;
  r.log.push_back(fmt::format("{}: {:.2f} us (default)", describe(fallback), base.us));
  for (const Candidate& c : candidates) {
    if (c == fallback) continue;
    Measurement m;
    try {
      m = measure(c);
    } catch (const std::exception& e) {
      r.log.push_back(fmt::format("{}: discarded, it failed: {}", describe(c), e.what()));
      continue;
    }
    if (const std::string why = agree(m.output, base.output); !why.empty()) {
      r.log.push_back(fmt::format("{}: discarded, {}", describe(c), why));
      continue;
    }
    r.log.push_back(fmt::format("{}: {:.2f} us, output checked", describe(c), m.us));
    if (m.us < r.winner_us) r.winner = c, r.winner_us = m.us;
  }
  return r;
}

}  // namespace kiln::autotune
