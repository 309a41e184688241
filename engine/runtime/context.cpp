#include "engine/runtime/context.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "engine/runtime/driver.hpp"

namespace kiln::runtime {

std::string DeviceInfo::arch() const {
  // Hopper and later get the arch-specific target (wgmma, setmaxnreg); a cubin for sm_90a
  // runs only on compute capability 9.0, which is the device it was made for.
  return fmt::format("sm_{}{}{}", cc_major, cc_minor, cc_major >= 9 ? "a" : "");
}

Context::Context(int ordinal) {
  const auto start = std::chrono::steady_clock::now();
  const auto ms_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  };
  const Driver& d = driver();
  const double driver_ms = ms_since(start);
  const std::string object = fmt::format("device {}", ordinal);
  int count = 0;
  KILN_CU_CHECK(d.cuDeviceGetCount(&count), object);
  if (ordinal < 0 || ordinal >= count)
    throw_cuda_error(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet",
                     fmt::format("{} (the driver reports {} devices)", object, count), __FILE__,
                     __LINE__);
  KILN_CU_CHECK(d.cuDeviceGet(&device_, ordinal), object);
  char name[256] = {};
  KILN_CU_CHECK(d.cuDeviceGetName(name, sizeof name, device_), object);
  info_.ordinal = ordinal;
  info_.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    KILN_CU_CHECK(d.cuDeviceGetAttribute(&v, a, device_), object);
    return v;
  };
  info_.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info_.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info_.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info_.max_shared_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info_.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info_.max_registers_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  info_.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  KILN_CU_CHECK(d.cuDeviceTotalMem(&info_.total_memory, device_), object);
  KILN_CU_CHECK(d.cuDriverGetVersion(&info_.driver_version), object);
  spdlog::debug(
      "kiln: {}: driver {:.1f} ms (loaded and initialized on first use), device queries {:.1f} ms",
      object, driver_ms, ms_since(start) - driver_ms);
  const CUdevice device = device_;
  ctx_ =
      std::async(std::launch::async, [device, object, ms_since] {
        const auto retain = std::chrono::steady_clock::now();
        CUcontext ctx = nullptr;
        KILN_CU_CHECK(driver().cuDevicePrimaryCtxRetain(&ctx, device), object);
        spdlog::debug("kiln: {}: primary context retained in {:.1f} ms", object, ms_since(retain));
        return ctx;
      }).share();
}

Context::~Context() {
  try {
    ctx_.get();
  } catch (const std::exception&) {
    return;  // never retained: nothing to release (the error reached whoever asked for it)
  }
  if (CUresult r = driver().cuDevicePrimaryCtxRelease(device_); r != CUDA_SUCCESS)
    spdlog::warn("kiln: releasing the primary context of device {} failed: {}", info_.ordinal,
                 result_name(r));
}

ContextGuard::ContextGuard(const Context& ctx) {
  KILN_CU_CHECK(driver().cuCtxPushCurrent(ctx.get()),
                fmt::format("context of device {}", ctx.info().ordinal));
}

ContextGuard::~ContextGuard() {
  CUcontext popped = nullptr;
  if (CUresult r = driver().cuCtxPopCurrent(&popped); r != CUDA_SUCCESS)
    spdlog::warn("kiln: cuCtxPopCurrent failed: {}", result_name(r));
}

void StreamDeleter::operator()(CUstream s) const {
  if (CUresult r = driver().cuStreamDestroy(s); r != CUDA_SUCCESS)
    spdlog::warn("kiln: cuStreamDestroy failed: {}", result_name(r));
}

void EventDeleter::operator()(CUevent e) const {
  if (CUresult r = driver().cuEventDestroy(e); r != CUDA_SUCCESS)
    spdlog::warn("kiln: cuEventDestroy failed: {}", result_name(r));
}

StreamHandle make_stream() {
  CUstream s = nullptr;
  KILN_CU_CHECK(driver().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "a new stream");
  return StreamHandle(s);
}

EventHandle make_event() {
  CUevent e = nullptr;
  KILN_CU_CHECK(driver().cuEventCreate(&e, CU_EVENT_DEFAULT), "a new event");
  return EventHandle(e);
}

float elapsed_ms(CUevent start, CUevent stop) {
  float ms = 0;
  KILN_CU_CHECK(driver().cuEventSynchronize(stop), "timing event");
  KILN_CU_CHECK(driver().cuEventElapsedTime(&ms, start, stop), "timing event pair");
  return ms;
}

bool capturing(CUstream s) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  KILN_CU_CHECK(driver().cuStreamIsCapturing(s, &status), "a stream's capture status");
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

std::vector<std::uint64_t> read_words(CUstream s, std::uint64_t src, std::size_t n) {
  std::vector<std::uint64_t> out(n);
  KILN_CU_CHECK(driver().cuStreamSynchronize(s), "the status words of a plan's gathers");
  KILN_CU_CHECK(driver().cuMemcpyDtoH(out.data(), CUdeviceptr(src), 8 * n),
                "the status words of a plan's gathers");
  return out;
}

void zero_words(CUstream s, std::uint64_t dst, std::size_t n) {
  KILN_CU_CHECK(driver().cuMemsetD8Async(CUdeviceptr(dst), 0, 8 * n, s),
                "the status words of a plan's gathers");
}

void join_streams(CUstream from, CUstream to) {
  if (from == to || capturing(from) || capturing(to)) return;
  CUevent e = nullptr;
  KILN_CU_CHECK(driver().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "a new event");
  const EventHandle event(e);
  KILN_CU_CHECK(driver().cuEventRecord(e, from), "an event joining two streams");
  KILN_CU_CHECK(driver().cuStreamWaitEvent(to, e, 0), "a stream waiting on another");
}

}  // namespace kiln::runtime
