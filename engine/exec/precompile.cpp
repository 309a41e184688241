#include "engine/exec/precompile.hpp"

#include <fmt/format.h>

#include <chrono>
#include <kiln/error.hpp>
#include <mutex>
#include <thread>

#include "engine/compiler/compiler.hpp"
#include "engine/parallel.hpp"

namespace kiln {

PrecompileSummary precompile_specs(const std::vector<KernelSpec>& specs,
                                   const PrecompileOptions& options, cache::KernelCache& cache,
                                   const PrecompileProgress& progress) {
  if (options.archs.empty())
    throw ArgumentError("precompile needs at least one arch (--arch sm_80,sm_90a)");
  std::vector<PrecompileWork> work;
  for (const KernelSpec& spec : specs)
    for (const std::string& arch : options.archs) work.push_back({spec, arch});
  return precompile_work(work, options, cache, progress);
}

PrecompileSummary precompile_work(const std::vector<PrecompileWork>& all,
                                  const PrecompileOptions& options, cache::KernelCache& cache,
                                  const PrecompileProgress& progress) {
  if (options.shard_count < 1 || options.shard_index < 0 ||
      options.shard_index >= options.shard_count)
    throw ArgumentError(fmt::format("bad shard {}/{}: expected I/N with 0 <= I < N",
                                    options.shard_index, options.shard_count));
  for (const PrecompileWork& w : all) compiler::target_options(w.arch);  // validate all first

  struct Work {
    const KernelSpec* spec;
    const std::string* arch;
  };
  std::vector<Work> work;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (i % std::size_t(options.shard_count) == std::size_t(options.shard_index))
      work.push_back({&all[i].spec, &all[i].arch});

  PrecompileSummary summary;
  summary.total = int(work.size());
  const auto start = std::chrono::steady_clock::now();
  std::mutex mutex;
  int done = 0;
  const auto one = [&](std::size_t w) {
    const KernelSpec& spec = *work[w].spec;
    PrecompileItem item;
    item.name = spec.name, item.arch = *work[w].arch;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      const compiler::SourceUnit unit(spec);
      const auto key = compiler::key_of(spec, item.arch, unit);
      const auto got = cache.get(key, [&] { return compiler::compile(spec, item.arch, unit); });
      if (!got.saved && cache.wants_disk())
        throw CacheError("compiled but not saved: the cache is " + cache.describe());
      item.status = got.source == cache::KernelCache::Source::compiled ? "compiled" : "cached";
      const bool local = got.source != cache::KernelCache::Source::compiled &&
                         got.source != cache::KernelCache::Source::remote;
      if (options.publish_cached && local && cache.remote()) cache.remote()->put(key, *got.kernel);
    } catch (const std::exception& e) {
      item.status = "failed";
      item.message = e.what();
      item.error = item.message.substr(0, item.message.find('\n'));
      if (const auto* c = dynamic_cast<const CompileError*>(&e)) item.log = c->log();
    }
    item.ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard<std::mutex> lock(mutex);
    (item.status == "compiled" ? summary.compiled
     : item.status == "cached" ? summary.cached
                               : summary.failed)++;
    if (item.status == "failed") summary.failures.push_back(item);
    ++done;
    if (progress) progress(done, summary.total, item);
  };
  const int jobs =
      options.jobs > 0 ? options.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  parallel_each(work.size(), std::size_t(jobs), one);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace kiln
