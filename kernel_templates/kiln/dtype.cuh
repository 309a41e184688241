#pragma once
// Element types of kiln's kernels and their conversions. Every op computes in f32; f16 and
// bf16 are converted on load and rounded to nearest on store.

// A kernel with no f16/bf16 anywhere is generated with KILN_NO_HALF_TYPES defined: the
// toolkit's half headers are then not parsed (about 14 ms of each NVRTC compile).
#ifndef KILN_NO_HALF_TYPES
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace kiln {

/// kiln's `bool` dtype: one byte, true where nonzero.
struct bool8 {
  unsigned char v;
};

__device__ __forceinline__ float to_float(float x) { return x; }
#ifndef KILN_NO_HALF_TYPES
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
#endif
__device__ __forceinline__ float to_float(bool8 x) { return x.v != 0 ? 1.0f : 0.0f; }

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
#ifndef KILN_NO_HALF_TYPES
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
#endif
template <>
__device__ __forceinline__ bool8 from_float<bool8>(float x) {
  return bool8{static_cast<unsigned char>(x != 0.0f)};
}

/// x rounded to T's precision and back (what a cast in the middle of a fused chain does).
template <class T>
__device__ __forceinline__ float round_to(float x) {
  return to_float(from_float<T>(x));
}

}  // namespace kiln
