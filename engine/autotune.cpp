#include "engine/autotune.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "engine/elementwise.hpp"
#include "engine/rows.hpp"

namespace kiln::autotune {

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

Space elementwise_space() {
  Space s;
  s.tunables = {{"block", {64, 128, 256, 512, 1024}}, {"unroll", {1, 2, 4, 8}}};
  s.fallback = {{"block", ElementwiseTunables::kDefaultBlock},
                {"unroll", ElementwiseTunables::kDefaultUnroll}};
  s.reject = [](const Candidate& c, const DeviceLimits& d) -> std::string {
    if (c.at("block") > d.max_threads_per_block)
      return fmt::format("{} threads per block, the device allows {}", c.at("block"),
                         d.max_threads_per_block);
    return "";
  };
  return s;
}

Space rows_space(long long row_groups, int vec, const Candidate& fallback, bool clusters) {
  Space s;
  s.tunables = {{"block", {32, 64, 128, 256, 512, 1024}}, {"items", {0, 1, 2, 4, 8, 16}}};
  if (clusters) s.tunables.push_back({"split", {1, 2, 4, 8}});
  s.fallback = fallback;
  if (!clusters) s.fallback.erase("split");
  s.reject = [row_groups, vec, clusters](const Candidate& c,
                                         const DeviceLimits& limits) -> std::string {
    const int block = c.at("block");
    if (block > limits.max_threads_per_block)
      return fmt::format("{} threads per block, the device allows {}", block,
                         limits.max_threads_per_block);
    const auto split = c.find("split");
    return reject_row_tunables({block, c.at("items"), 0, split == c.end() ? 1 : split->second},
                               row_groups, vec, clusters);
  };
  return s;
}

Space columns_space(const Candidate& fallback) {
  Space s;
  s.tunables = {{"block", {64, 128, 256, 512}}, {"cols", {1, 2, 4, 8, 16, 32}}};
  s.fallback = fallback;
  s.reject = [](const Candidate& c, const DeviceLimits& limits) -> std::string {
    const int block = c.at("block"), cols = c.at("cols");
    if (block > limits.max_threads_per_block)
      return fmt::format("{} threads per block, the device allows {}", block,
                         limits.max_threads_per_block);
    return cols > block / 2
               ? fmt::format("{} column groups for {} threads: fewer than 2 threads per column",
                             cols, block)
               : "";
  };
  return s;
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
    if (!agree(m.output, base.output)) {
      r.log.push_back(
          fmt::format("{}: discarded, its output differs from the default's", describe(c)));
      continue;
    }
    r.log.push_back(fmt::format("{}: {:.2f} us, output checked", describe(c), m.us));
    if (m.us < r.winner_us) r.winner = c, r.winner_us = m.us;
  }
  return r;
}

}  // namespace kiln::autotune
