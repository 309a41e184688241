#pragma once
// Move-only owners of a device's primary context, streams and events, and the scoped guard
// that makes a context current. No op code calls cuCtxPushCurrent itself.

#include <cuda.h>

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

namespace kiln::runtime {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int max_shared_per_block_optin = 0;
  int max_threads_per_block = 0;
  int max_registers_per_block = 0;
  int l2_bytes = 0;
  std::size_t total_memory = 0;
  int driver_version = 0;
  /// The NVRTC target for this device: sm_90a on Hopper (arch-specific features), sm_86 etc.
  std::string arch() const;
};

/// The retained primary context of one device. The device is queried at once (info(), so the
/// arch is known and kernels can compile); the context, which takes the driver ~100 ms on an
/// H100, is retained on a thread of its own, and get() waits for it.
class Context {
 public:
  explicit Context(int ordinal);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// The context, once retained; CudaError if retaining it failed.
  CUcontext get() const { return ctx_.get(); }
  const DeviceInfo& info() const { return info_; }

 private:
  CUdevice device_ = 0;
  std::shared_future<CUcontext> ctx_;
  DeviceInfo info_;
};

/// Makes a context current for a scope and restores the previous one.
class ContextGuard {
 public:
  explicit ContextGuard(const Context& ctx);
  ~ContextGuard();
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;
};

struct StreamDeleter {
  void operator()(CUstream s) const;
};
struct EventDeleter {
  void operator()(CUevent e) const;
};
using StreamHandle = std::unique_ptr<std::remove_pointer_t<CUstream>, StreamDeleter>;
using EventHandle = std::unique_ptr<std::remove_pointer_t<CUevent>, EventDeleter>;

/// A non-blocking stream of the current context.
StreamHandle make_stream();
/// An event with timing (for benchmarks) on the current context.
EventHandle make_event();
/// Milliseconds between two recorded events, after waiting for the second.
float elapsed_ms(CUevent start, CUevent stop);
/// Orders the work queued on `from` so far before the work queued on `to` from now on (an
/// event recorded on one, waited for by the other), on the current context. Nothing when they
/// are one stream, or when either is capturing a CUDA graph: a capture may not wait on work
/// outside it, and its owner orders it (torch runs warm-up work and synchronizes first).
void join_streams(CUstream from, CUstream to);
/// Whether `s` is capturing a CUDA graph (nothing on it may wait for the host then).
bool capturing(CUstream s);
/// The `n` 64-bit words at `src` once the work queued on `s` so far is done (the stream
/// synchronized), on the current context.
std::vector<std::uint64_t> read_words(CUstream s, std::uint64_t src, std::size_t n);
/// Sets the `n` 64-bit words at `dst` to 0, after the work queued on `s` so far.
void zero_words(CUstream s, std::uint64_t dst, std::size_t n);

}  // namespace kiln::runtime
