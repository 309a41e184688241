// Probe (not part of the build): what one barrier between a block's loads and its stores costs
// a copy shaped like kiln's split rows: bf16 [1024, 65536] (128 MiB in, 128 MiB out), each block
// of 256 threads loading 16 KiB (4 x 16 bytes a thread), then nothing / __syncthreads / also a
// cluster barrier of 2, 4 or 8 blocks, then storing it. Against a device-to-device memcpy of the
// same bytes; CUDA events, median of 30 after 5 warm-ups. On the GPU machine:
//   nvcc -O3 -arch=sm_90a -std=c++17 -o /tmp/probe bench/probe_cluster_barrier.cu && /tmp/probe
// Its figures on an H100: bench/NOTES.md.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace cg = cooperative_groups;

// Mode 0: no barrier; 1: each warp's word through shared memory and __syncthreads (a block
// merge's shape); 2: that, then the cluster's barrier.
template <int Mode, int Split>
__global__ void __launch_bounds__(256) __cluster_dims__(Split, 1, 1)
    part(const uint4* __restrict__ in, uint4* __restrict__ out) {
  const size_t base = size_t(blockIdx.x) * 1024;
  uint4 v[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) v[i] = in[base + i * 256 + threadIdx.x];
  unsigned word = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) word ^= v[i].x ^ v[i].y ^ v[i].z ^ v[i].w;
  if (Mode >= 1) {
    __shared__ unsigned words[8];
    if (threadIdx.x % 32 == 0) words[threadIdx.x / 32] = word;
    __syncthreads();
    word ^= words[(threadIdx.x / 32 + 1) % 8];
  }
  if (Mode == 2) cg::this_cluster().sync();
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    uint4 w = v[i];
    w.x ^= word & 0;  // the word is "used"; the data is copied unchanged
    out[base + i * 256 + threadIdx.x] = w;
  }
}

template <class Launch>
float median_us(Launch launch) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  std::vector<float> t;
  for (int r = 0; r < 35; ++r) {
    cudaEventRecord(a);
    launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    if (r >= 5) t.push_back(ms * 1e3f);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  const size_t bytes = size_t(1024) * 65536 * 2;
  uint4 *in = nullptr, *out = nullptr;
  if (cudaMalloc(&in, bytes) != cudaSuccess || cudaMalloc(&out, bytes) != cudaSuccess) return 1;
  cudaMemset(in, 1, bytes);
  const int blocks = int(bytes / 16 / 1024);
  const float copy = median_us([&] { cudaMemcpy(out, in, bytes, cudaMemcpyDeviceToDevice); });
  const auto row = [&](const char* what, float us) {
    std::printf("%-40s %7.1f us  %5.1f %% of the memcpy (%.1f us)\n", what, us, 100.0 * copy / us,
                copy);
  };
  row("no barrier", median_us([&] { part<0, 1><<<blocks, 256>>>(in, out); }));
  row("__syncthreads", median_us([&] { part<1, 1><<<blocks, 256>>>(in, out); }));
  row("__syncthreads + cluster barrier of 2",
      median_us([&] { part<2, 2><<<blocks, 256>>>(in, out); }));
  row("__syncthreads + cluster barrier of 4",
      median_us([&] { part<2, 4><<<blocks, 256>>>(in, out); }));
  row("__syncthreads + cluster barrier of 8",
      median_us([&] { part<2, 8><<<blocks, 256>>>(in, out); }));
  row("no barrier, clusters of 8", median_us([&] { part<0, 8><<<blocks, 256>>>(in, out); }));
  // 40 KiB of dynamic shared memory each: 5 blocks per SM, as kiln's softmax kernel has.
  const int smem = 40 << 10;
  std::printf("-- 5 blocks per SM\n");
  row("no barrier", median_us([&] { part<0, 1><<<blocks, 256, smem>>>(in, out); }));
  row("__syncthreads", median_us([&] { part<1, 1><<<blocks, 256, smem>>>(in, out); }));
  row("__syncthreads + cluster barrier of 2",
      median_us([&] { part<2, 2><<<blocks, 256, smem>>>(in, out); }));
  row("__syncthreads + cluster barrier of 8",
      median_us([&] { part<2, 8><<<blocks, 256, smem>>>(in, out); }));
  const cudaError_t e = cudaGetLastError();
  std::printf("%s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
