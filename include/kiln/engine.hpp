#pragma once
/// \file
/// kiln::Engine: one device, one stream, one kernel cache.

#include <cstdint>
#include <functional>
#include <kiln/cache_counters.hpp>
#include <kiln/tensor.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct EngineOptions {
  int device = 0;  ///< CUDA device ordinal
  /// Target architecture ("sm_90a"). Empty: the device's. Given with `offline`, no GPU is
  /// touched: kernels are specialized, compiled and cached but never launched.
  std::string arch;
  bool offline = false;
  /// Cache directory; unset = $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln.
  std::optional<std::string> cache_dir;
  /// Keep compiled kernels on disk. Also off when KILN_DISABLE_DISK_CACHE=1.
  bool disk_cache = true;
  /// Size cap of the cache directory; 0 = $KILN_CACHE_MAX_BYTES, else 2 GiB.
  std::uint64_t cache_max_bytes = 0;
  /// Read-only bundles looked up before the disk cache, in order; added to those of
  /// $KILN_BUNDLE (colon-separated). A bundle that does not verify is refused (CacheError).
  std::vector<std::string> bundles;
  /// Append every specialization used to this manifest (also $KILN_RECORD), for
  /// `kiln precompile`.
  std::string record;
  /// Apply this GPU's tuning records (`kiln tune`, in <cache dir>/tuning/) when specializing.
  /// Also off when KILN_DISABLE_TUNING=1; never on an offline engine (no GPU to match).
  bool tuning = true;
};

/// One kernel the engine prepared: where it came from and what it cost.
struct KernelRecord {
  std::string name;    ///< readable name, e.g. "silu_bf16__r1v8" (op, dtype, rank, vector width)
  std::string key;     ///< cache key (hex)
  std::string source;  ///< "compiled", "bundle", "disk", "remote" or "memory"
  double compile_ms = 0;
  int registers = -1;  ///< per thread, from the cubin (-1 for a PTX image)
  int spill_bytes =
      -1;  ///< spill stores, from ptxas (0 where the cubin has no stack frame; -1 unknown)
};

namespace detail {
class EngineImpl;
struct EngineAccess;
}  // namespace detail

/// True when a CUDA driver loads and reports a device; `why` gets the reason if not.
bool gpu_available(std::string* why = nullptr);

/// The entry point of kiln. Not thread-safe: use one engine per thread or lock around it.
class Engine {
 public:
  explicit Engine(EngineOptions options = {});
  ~Engine();
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;

  bool has_device() const;
  int device() const;  ///< the CUDA device ordinal (EngineOptions::device)
  const std::string& arch() const;
  std::string device_name() const;  ///< "NVIDIA H100 80GB HBM3", or "(offline)"
  const std::string& cache_dir() const;

  /// Uninitialized device memory.
  Tensor empty(const Shape& shape, DType dtype);
  /// Device memory holding a copy of `numel(shape) * size_of(dtype)` host bytes.
  Tensor from_host(const Shape& shape, DType dtype, const void* data);
  /// Blocks until the engine's stream is idle.
  void synchronize();
  /// The CUstream kernels launch on (as an opaque handle): the engine's own, or the one given
  /// to set_stream.
  void* stream() const;
  /// Launches go to `stream` from now on: a CUstream of this engine's device, which the engine
  /// does not own (such as `torch.cuda.current_stream().cuda_stream`; 0 is the legacy default
  /// stream). Work queued before on the previous stream is ordered first. Several engines or
  /// plans may share a stream; a plan's intermediates are not shared between streams in flight.
  void set_stream(void* stream);
  /// Launches go to the engine's own stream again, after the work queued so far.
  void use_own_stream();
  /// Orders the work queued on the engine so far before the work queued on `stream` from now
  /// on (as a DLPack consumer on another stream asks).
  void join(void* stream);

  /// Median milliseconds of `reps` runs of `fn`, each timed with events on the engine's
  /// stream, after `warmup` untimed runs.
  double time_median_ms(const std::function<void()>& fn, int warmup = 3, int reps = 20);

  CacheCounters counters() const;
  /// Every kernel prepared so far, in order.
  const std::vector<KernelRecord>& kernels() const;

 private:
  friend struct detail::EngineAccess;
  std::unique_ptr<detail::EngineImpl> impl_;
};

}  // namespace kiln
