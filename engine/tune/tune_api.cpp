// kiln::tune, the library's face of `kiln tune`: every kernel of some graphs tuned on the
// engine's GPU, each winner saved as a record as soon as it is measured.
#include <kiln/tune.hpp>

#include "cache/remote_tuning.hpp"
#include "engine/exec/engine_impl.hpp"
#include "engine/tune/tuner.hpp"

namespace kiln {
namespace autotune {

std::vector<KernelTuning> tune_and_record(Engine& engine, const std::vector<Graph>& graphs,
                                          const TuneOptions& options, cache::TuningDb& db,
                                          const std::string& dir) {
  std::set<std::string> done;
  std::vector<KernelTuning> all;
  cache::RemoteCache* remote = detail::impl_of(engine).cache->remote();
  for (const Graph& g : graphs)
    for (KernelTuning& t : tune_graph(engine, g, options, done)) {
      if (t.skipped.empty()) {
        db.put(t.record);
        db.save(dir);  // after every kernel: an interrupted run keeps what it measured
        if (remote) cache::publish_tuning(*remote, t.record);  // the fleet's: the faster wins
      }
      if (options.done) options.done(t);
      all.push_back(std::move(t));
    }
  return all;
}

}  // namespace autotune

std::vector<TunedKernel> tune(Engine& engine, const std::vector<Graph>& graphs, double budget_s) {
  detail::EngineImpl& e = detail::impl_of(engine);
  e.require_device("tuning");
  const std::string dir = e.tuning_dir();
  cache::TuningDb db = cache::TuningDb::load(dir, engine.device_name());
  autotune::TuneOptions options;
  if (budget_s > 0)
    options.deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(std::int64_t(budget_s * 1e3));
  std::vector<TunedKernel> out;
  for (const autotune::KernelTuning& t :
       autotune::tune_and_record(engine, graphs, options, db, dir)) {
    TunedKernel k;
    k.kernel = t.kernel;
    k.candidates = t.candidates;
    k.skipped = t.skipped;
    if (t.skipped.empty()) {
      k.default_us = t.result.default_us;
      k.tuned_us = t.result.winner_us;
      k.winner = autotune::describe(t.result.winner);
    }
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace kiln
