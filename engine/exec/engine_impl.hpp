#pragma once
// What an Engine holds: the device context and stream (unless offline), the kernel cache, and
// the kernels already loaded, looked up by their specialization.

#include <fmt/format.h>

#include <kiln/engine.hpp>
#include <kiln/error.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/kernel_cache.hpp"
#include "cache/manifest.hpp"
#include "cache/tuning.hpp"
#include "engine/codegen/launch.hpp"
#include "engine/compiler/headers.hpp"
#include "engine/exec/launch_cache.hpp"
#include "engine/runtime/context.hpp"
#include "engine/runtime/module.hpp"
#include "engine/target.hpp"
#include "stages/kernel.hpp"

namespace kiln::detail {

struct PreparedCall;

/// A kernel ready to launch (or, offline, compiled and cached only).
struct LoadedKernel {
  std::shared_ptr<const CompiledKernel> compiled;
  std::unique_ptr<runtime::Module> module;  ///< null on an offline engine
  std::size_t record = 0;                   ///< index into EngineImpl::records
  unsigned max_dynamic_shared = 0;          ///< what a launch of it may use on this device
  unsigned sm_count = 0;                    ///< the device's SMs (0: offline)

  /// The configuration a launch of `L` gets: its own, with the dynamic shared memory it asks
  /// for up to what the device allows, in 16-byte units, and a persistent kernel's grid at most
  /// one block per SM.
  LaunchConfig config_for(const KernelLaunch& L) const {
    LaunchConfig c = L.config;
    if (sm_count && c.shared_required && c.shared > max_dynamic_shared)  // on a device
      throw ArgumentError(fmt::format(
          "kernel {} needs {} bytes of shared memory a block; this device grants {}: it was "
          "specialized for another GPU (an engine specializes for its own)",
          L.spec.name, c.shared, max_dynamic_shared));
    c.shared = std::min(c.shared, max_dynamic_shared) / 16 * 16;
    if (c.persistent && sm_count) c.grid[0] = std::min(c.grid[0], sm_count);
    return c;
  }
};

class EngineImpl {
 public:
  explicit EngineImpl(EngineOptions options);
  ~EngineImpl();

  /// The kernel of `spec` for this engine's arch: already loaded, or from the cache, or
  /// compiled now; loaded into the context when there is a device.
  /// `source` (optional) gets where this lookup found it: "memory", "disk" or "compiled".
  const LoadedKernel& prepare(const KernelSpec& spec, std::string* source = nullptr);
  /// prepare() of each spec, the ones not yet loaded fetched or compiled side by side (at most
  /// KILN_COMPILE_THREADS at once, default: the cores, up to 8), then loaded in order.
  std::vector<const LoadedKernel*> prepare_all(const std::vector<const KernelSpec*>& specs);
  /// Launches `k` with the shape and shared memory of `L` and the parameters `params` (taken
  /// with the context current: tensor maps encode then).
  void launch(const LoadedKernel& k, const KernelLaunch& L, LaunchParams& params);
  /// Prepares and launches a specialized kernel (nothing when it has no work).
  void launch_kernel(const KernelLaunch& L);

  /// Where this engine's GPU's tuning records live: the cache directory it was given, else the
  /// default one (also with the disk cache off).
  std::string tuning_dir() const;
  /// Throws CudaError when the engine is offline.
  void require_device(const char* what) const;

  /// Unique in the process (never reused, unlike an address): what was prepared for one engine
  /// is found by its serial and never served to another.
  const std::uint64_t serial;
  EngineOptions options;
  std::string arch;
  Target target;  ///< the arch and the limits kernels are specialized for (the device's)
  std::string cache_dir;
  std::shared_ptr<runtime::Context> context;  ///< null offline
  /// The stream launches go to: the one set_stream gave, else the engine's own, created at the
  /// first call (which waits for the context: an engine compiles while the driver retains it).
  CUstream stream();
  /// Launches go to `s` (the engine's own when absent), after the work queued on the old one.
  void set_stream(std::optional<CUstream> s);
  std::unique_ptr<cache::KernelCache> cache;
  std::unique_ptr<cache::ManifestRecorder> recorder;  ///< KILN_RECORD / EngineOptions::record
  std::vector<KernelRecord> records;
  /// This GPU's tuning records (none offline, with tuning off, or when the file is unreadable).
  cache::TuningDb tuning{""};
  /// What each eager op call signature (engine/exec/ops_api.cpp) and each kiln::launch
  /// signature of a template (engine/exec/template_api.cpp) seen prepared; a signature's first
  /// word is its CallKind.
  SignatureCache<PreparedCall> calls{512};

 private:
  struct Fetched {
    cache::CacheKey key;
    cache::KernelCache::Result got;
  };
  /// The compiled kernel of `spec`: from the cache or compiled. Thread-safe.
  Fetched fetch(const KernelSpec& spec) const;
  /// Loads what fetch() found into the context and records it (one thread at a time).
  const LoadedKernel& load(const KernelSpec& spec, std::string memo, const Fetched& f,
                           std::string* source);

  std::unordered_map<std::string, LoadedKernel> loaded_;  // by source + expression
  unsigned compile_threads_ = 1;
  std::once_flag stream_once_;
  runtime::StreamHandle stream_;
  std::optional<CUstream> external_stream_;  ///< a caller's (set_stream), not owned
};

/// The engine behind an Engine (kiln's own code only: not in the public headers).
struct EngineAccess {
  static EngineImpl& impl(Engine& e) { return *e.impl_; }
};
inline EngineImpl& impl_of(Engine& e) { return EngineAccess::impl(e); }

}  // namespace kiln::detail
