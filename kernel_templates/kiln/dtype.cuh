#pragma once
// Element types of kiln's kernels and their conversions. Every op computes in f32; f16 and
// bf16 are converted on load and rounded to nearest even on store.
//
// kiln's half types are its own 2-byte structs converted with the PTX instructions the
// toolkit's intrinsics use (cvt.rn.f16.f32, cvt.rn.bf16.f32): the toolkit's cuda_fp16.h and
// cuda_bf16.h cost about 25 ms of every NVRTC compile to parse. Being distinct types, they
// coexist with __half and __nv_bfloat16 in a template that includes those headers.

namespace kiln {

/// kiln's `bool` dtype: one byte, true where nonzero.
struct bool8 {
  unsigned char v;
};

/// IEEE binary16, bit-compatible with __half.
struct alignas(2) half {
  unsigned short bits;
};

/// bfloat16, bit-compatible with __nv_bfloat16.
struct alignas(2) bf16 {
  unsigned short bits;
};

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(bool8 x) { return x.v != 0 ? 1.0f : 0.0f; }
__device__ __forceinline__ float to_float(half x) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
}
__device__ __forceinline__ float to_float(bf16 x) {
  // The instruction the toolkit's __bfloat162float uses: a shift written in C++ compiles to other
  // code, and a bf16 softmax over long rows ran 14-17 % slower with it (bench/NOTES.md).
  float f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("cvt.f32.bf16 %0, %1;" : "=f"(f) : "h"(x.bits));
#else
  asm("mov.b32 %0, {0, %1};" : "=f"(f) : "h"(x.bits));
#endif
  return f;
}

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ bool8 from_float<bool8>(float x) {
  return bool8{static_cast<unsigned char>(x != 0.0f)};
}
template <>
__device__ __forceinline__ half from_float<half>(float x) {
  half h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(x));
  return h;
}
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float x) {
  bf16 h;
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(x));
#else
  // No bf16 conversion before sm_80: round to nearest even by hand; NaN becomes the canonical
  // NaN, as cvt.rn.bf16.f32 makes it.
  const unsigned u = __float_as_uint(x);
  h.bits =
      x != x ? (unsigned short)0x7fffu : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
  return h;
}

/// x rounded to T's precision and back (what a cast in the middle of a fused chain does).
template <class T>
__device__ __forceinline__ float round_to(float x) {
  return to_float(from_float<T>(x));
}

/// Two f32 values as a pair of T (f16 or bf16) in one register, `lo` in the low half (sm_80 and
/// later: an A fragment of mma or wgmma, or 16-bit values held for later).
template <class T>
__device__ __forceinline__ unsigned pack2(float lo, float hi);
template <>
__device__ __forceinline__ unsigned pack2<half>(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
template <>
__device__ __forceinline__ unsigned pack2<bf16>(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/// The two values of pack2<T>'s register, exactly. The halves are named in PTX (mov.b32 {l, h}),
/// so that each conversion reads its half in place: taken apart in C++, each half cost a byte
/// permute (PRMT) before its conversion (bench/NOTES.md).
template <class T>
__device__ __forceinline__ void unpack2(unsigned r, float& lo, float& hi);
template <>
__device__ __forceinline__ void unpack2<half>(unsigned r, float& lo, float& hi) {
  asm("{.reg .f16 l, h;\n mov.b32 {l, h}, %2;\n cvt.f32.f16 %0, l;\n cvt.f32.f16 %1, h;}"
      : "=f"(lo), "=f"(hi)
      : "r"(r));
}
template <>
__device__ __forceinline__ void unpack2<bf16>(unsigned r, float& lo, float& hi) {
  lo = __uint_as_float(r << 16), hi = __uint_as_float(r & 0xffff0000u);  // exact: bf16 is f32's top
}

}  // namespace kiln
