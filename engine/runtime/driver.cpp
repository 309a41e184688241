#include "engine/runtime/driver.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <kiln/error.hpp>
#include <mutex>

namespace kiln::runtime {
namespace {

#define KILN_STRINGIZE_EXPANDED(x) KILN_STRINGIZE(x)
#define KILN_STRINGIZE(x) #x

struct Loaded {
  Driver driver;
  std::string error;  // empty when loaded
};

Loaded load() {
  Loaded out;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    out.error = fmt::format(
        "no CUDA driver: dlopen(libcuda.so.1) failed ({}). Launching kernels needs an NVIDIA "
        "driver; to compile without a GPU, create the engine with EngineOptions::offline and an "
        "arch such as sm_90a",
        why ? why : "unknown reason");
    return out;
  }
  // Note: the library stays open for the life of the process; the driver does not support
  // being unloaded while contexts exist.
#define KILN_DRIVER_LOAD(fn)                                                                  \
  out.driver.fn = reinterpret_cast<decltype(&::fn)>(dlsym(lib, KILN_STRINGIZE_EXPANDED(fn))); \
  if (!out.driver.fn && out.error.empty())                                                    \
    out.error = fmt::format("the CUDA driver lacks {}; update the NVIDIA driver",             \
                            KILN_STRINGIZE_EXPANDED(fn));
  KILN_DRIVER_FUNCTIONS(KILN_DRIVER_LOAD)
#undef KILN_DRIVER_LOAD
  if (!out.error.empty()) return out;
  if (CUresult r = out.driver.cuInit(0); r != CUDA_SUCCESS) {
    const char* name = nullptr;
    out.driver.cuGetErrorName(r, &name);
    out.error = fmt::format("cuInit failed: {} (is a GPU visible to this process?)",
                            name ? name : "unknown");
  }
  return out;
}

const Loaded& loaded() {
  static const Loaded instance = load();
  return instance;
}

std::string hint(CUresult r) {
  switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "; free device memory or use smaller tensors";
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_IMAGE:
      return "; the kernel was built for another GPU arch: run `kiln cache clear` or set "
             "EngineOptions::arch to this device's";
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
      return "; the context is now unusable: check the views passed to the op (pointers, "
             "extents, strides) and restart the process";
    default:
      return "";
  }
}

}  // namespace

const Driver& driver() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw CudaError(-1, "dlopen", "libcuda.so.1", l.error);
  return l.driver;
}

bool device_available(std::string* why) {
  const Loaded& l = loaded();
  if (!l.error.empty()) {
    if (why) *why = l.error;
    return false;
  }
  int count = 0;
  if (l.driver.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    if (why) *why = "the CUDA driver reports no device";
    return false;
  }
  return true;
}

std::string result_name(CUresult r) {
  const char* name = nullptr;
  const Loaded& l = loaded();
  if (l.error.empty() && l.driver.cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  return fmt::format("CUresult {}", int(r));
}

void throw_cuda_error(CUresult r, const char* call, const std::string& object, const char* file,
                      int line) {
  const char* text = nullptr;
  const Loaded& l = loaded();
  if (l.error.empty()) l.driver.cuGetErrorString(r, &text);
  throw CudaError(int(r), call, object,
                  fmt::format("{} failed on {}: {} ({}){} [{}:{}]", call, object, result_name(r),
                              text ? text : "no description", hint(r), file, line));
}

}  // namespace kiln::runtime
