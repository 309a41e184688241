// Tuning probe for the row template: for softmax and layer_norm over the benchmark's shapes,
// runs every candidate of the tuner's space (threads per block x groups per thread in
// registers) through autotune::tune on the GPU: each output compared with the default's (a
// candidate that differs is discarded), median of 20 event-timed runs after 3 warm-ups.
// Prints the log and one summary line per workload. Notes: bench/NOTES.md.
#include <fmt/format.h>

#include <kiln/kiln.hpp>

#include "bench/common.hpp"
#include "engine/autotune.hpp"
#include "engine/engine_impl.hpp"
#include "engine/plan_impl.hpp"

int main() {
  using kiln::DType;
  kiln::Engine e;
  std::vector<std::string> summary;
  for (DType t : {DType::bf16, DType::f32})
    for (auto [R, C] : std::vector<std::pair<std::int64_t, std::int64_t>>{{32768, 4096}, {65536, 1024}, {4096, 16384}, {1024, 65536}})
      for (const char* op : {"softmax", "layer_norm"}) {
        kiln::Graph g;
        g.output(g.add(op, {g.input("x", {R, C}, t)}, {}, "y"));
        const kiln::detail::PlanImpl p(g, true);
        kiln::Tensor x = e.from_host({R, C}, t, kiln::bench::random_host(t, R * C, 1).data()), y = e.empty({R, C}, t);
        std::vector<kiln::TensorView> values = {x.view(), y.view()};
        const kiln::KernelLaunch base = p.specialize(p.groups.at(0), values, g);
        const auto space = kiln::autotune::rows_space(std::int64_t(base.index_arg), base.vec);
        const kiln::autotune::Measure measure = [&](const kiln::autotune::Candidate& c) {
          const kiln::KernelLaunch L = p.specialize(p.groups.at(0), values, g, {c.at("block"), c.at("items")});
          y.fill_bytes(0xff);
          kiln::autotune::Measurement m;
          m.us = 1e3 * e.time_median_ms([&] { e.impl().launch_kernel(L); }, 3, 20);
          m.output = kiln::bench::fetch(y);
          return m;
        };
        const double tolerance = t == DType::f32 ? 1e-5 : 1e-2;  // ~1 bf16 ulp: the order of sums differs
        const auto agree = [&](const std::vector<unsigned char>& got, const std::vector<unsigned char>& want) {
          return kiln::bench::max_diff(want, got, t) <= tolerance;
        };
        const auto r = kiln::autotune::tune(space.candidates({}), space.fallback, measure, agree);
        const std::string name = fmt::format("{} {} {}x{}", op, kiln::name_of(t), R, C);
        for (const std::string& line : r.log) fmt::print("{}: {}\n", name, line);
        const double gbs = 2.0 * double(R * C) * double(kiln::size_of(t)) / r.winner_us / 1e3;
        summary.push_back(fmt::format("{:<28} default {:<18} {:8.1f} us  best {:<18} {:8.1f} us  {:6.0f} GB/s  x{:.2f}", name,
                                      kiln::autotune::describe(space.fallback), r.default_us,
                                      kiln::autotune::describe(r.winner), r.winner_us, gbs, r.default_us / r.winner_us));
        fflush(stdout);
      }
  for (const std::string& s : summary) fmt::print("{}\n", s);
  return 0;
}
