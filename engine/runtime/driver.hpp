#pragma once
// The CUDA Driver API, opened with dlopen on first use so that kiln starts and compiles on a
// machine with no driver. Call through driver().cuXxx(...) inside KILN_CU_CHECK.

#include <cuda.h>

#include <string>

namespace kiln::runtime {

// Every driver entry point kiln uses. cuda.h maps some names to versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2); the table and dlsym see the mapped names.
// clang-format off
#define KILN_DRIVER_FUNCTIONS(X) \
  X(cuInit) \
  X(cuDriverGetVersion) \
  X(cuDeviceGet) \
  X(cuDeviceGetCount) \
  X(cuDeviceGetName) \
  X(cuDeviceGetAttribute) \
  X(cuDeviceTotalMem) \
  X(cuDevicePrimaryCtxRetain) \
  X(cuDevicePrimaryCtxRelease) \
  X(cuCtxPushCurrent) \
  X(cuCtxPopCurrent) \
  X(cuCtxSynchronize) \
  X(cuStreamCreate) \
  X(cuStreamDestroy) \
  X(cuStreamSynchronize) \
  X(cuStreamWaitEvent) \
  X(cuStreamIsCapturing) \
  X(cuEventCreate) \
  X(cuEventDestroy) \
  X(cuEventRecord) \
  X(cuEventSynchronize) \
  X(cuEventElapsedTime) \
  X(cuModuleLoadData) \
  X(cuModuleUnload) \
  X(cuModuleGetFunction) \
  X(cuFuncGetAttribute) \
  X(cuFuncSetAttribute) \
  X(cuLaunchKernel) \
  X(cuMemAlloc) \
  X(cuMemFree) \
  X(cuMemcpyHtoD) \
  X(cuMemcpyDtoH) \
  X(cuMemcpyDtoDAsync) \
  X(cuMemsetD8) \
  X(cuMemsetD8Async) \
  X(cuGetErrorName) \
  X(cuGetErrorString) \
  X(cuGraphCreate) \
  X(cuGraphAddKernelNode) \
  X(cuGraphAddDependencies_v2) \
  X(cuGraphInstantiate) \
  X(cuGraphLaunch) \
  X(cuGraphExecKernelNodeSetParams) \
  X(cuGraphExecDestroy) \
  X(cuGraphDestroy) \
  X(cuLaunchKernelEx) \
  X(cuGraphKernelNodeSetAttribute) \
  X(cuTensorMapEncodeTiled) \
  X(cuTensorMapEncodeIm2col)
// clang-format on

struct Driver {
#define KILN_DRIVER_MEMBER(fn) decltype(&::fn) fn = nullptr;
  KILN_DRIVER_FUNCTIONS(KILN_DRIVER_MEMBER)
#undef KILN_DRIVER_MEMBER
};

/// The loaded, initialized driver. Throws CudaError (result -1) naming what is missing when
/// libcuda.so.1 cannot be opened or cuInit fails.
const Driver& driver();

/// True when a driver loads and reports at least one device; `why` gets the reason if not.
bool device_available(std::string* why = nullptr);

/// "CUDA_ERROR_OUT_OF_MEMORY".
std::string result_name(CUresult r);

[[noreturn]] void throw_cuda_error(CUresult r, const char* call, const std::string& object,
                                   const char* file, int line);

}  // namespace kiln::runtime

/// Checks a driver call; on failure throws CudaError with the call, the CUresult name, the
/// object it acted on and file:line. The message is built only on failure.
#define KILN_CU_CHECK(call, object)                                                            \
  do {                                                                                         \
    const CUresult kiln_cu_result_ = (call);                                                   \
    if (kiln_cu_result_ != CUDA_SUCCESS)                                                       \
      ::kiln::runtime::throw_cuda_error(kiln_cu_result_, #call, (object), __FILE__, __LINE__); \
  } while (0)
