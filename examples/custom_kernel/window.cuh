// A user's kernel template for kiln (examples/custom_kernel): a Gaussian window,
// y[i] = x[i] * exp(-alpha * x[i]^2) + beta, each thread handling ITEMS elements a block of
// BLOCK threads apart. T is the tensors' element type (float, __half or __nv_bfloat16);
// BLOCK and ITEMS are tunables `kiln tune` can pick.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "window_math.cuh"

template <class T, int BLOCK, int ITEMS>
__global__ void __launch_bounds__(BLOCK)
    gauss_window(const T* x, T* y, long long n, float alpha, float beta) {
  const long long base = (long long)blockIdx.x * BLOCK * ITEMS + threadIdx.x;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const long long i = base + (long long)k * BLOCK;
    if (i < n) y[i] = T(window::gauss(float(x[i]), alpha) + beta);
  }
}
