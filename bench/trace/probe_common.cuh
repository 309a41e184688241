#pragma once
// What bench/trace's convolution probes share (tma_probe.cu, ring_probe.cu, wgmma_probe.cu): a
// convolution row's shape, its stage layout, the TMA maps of x and w as kiln's wgmma convolution
// encodes them, the PTX kiln's headers lack (4-D tiled and multicast loads, remote arrivals),
// random inputs, and the timing of a launch. Built with nvcc for sm_90a, linked with -lcuda.
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <kiln/tma.cuh>

#define CHECK(x)                                                               \
  do {                                                                         \
    auto e = (x);                                                              \
    if (e != 0) {                                                              \
      std::fprintf(stderr, "%s failed: %d (line %d)\n", #x, int(e), __LINE__); \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

/// A 3x3 convolution with padding 1 on [n, hw, hw, c] channels_last f16, its tiles 128 x bn.
struct Shape {
  int n, hw, c, k, bn, split;  // images, side, channels in, out, tile width, K split
  int stride = 1;
  int hold = 0;  // uses a landed stage stays taken (the consumers' products) before its reuse
  __host__ __device__ int q() const { return (hw + 2 - 3) / stride + 1; }  // output side
  __host__ __device__ int m_tiles() const { return (n * q() * q() + 127) / 128; }
  __host__ __device__ int steps() const { return 9 * (c / 64) / split; }  // K steps a block
  int blocks() const { return m_tiles() * ((k + bn - 1) / bn) * split; }
  size_t x_elems() const { return size_t(n) * hw * hw * c; }
  size_t w_elems() const { return size_t(k) * 9 * c; }
};

/// A stage: A's 16 KB, then B's bn rows of 128 bytes, 1024-byte aligned (the 128-byte swizzle).
__host__ __device__ constexpr int stage_bytes(int bn) {
  return 128 * 128 + (bn * 128 + 1023) / 1024 * 1024;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ inline void load_4d(void* dst, const kiln::TensorMap* map, int c0, int c1, int c2,
                               int c3, unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(kiln::tma::shared_address(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
      "r"(kiln::tma::shared_address(bar))
      : "memory");
}
/// A tiled box to the same offset of every block of `mask` in the cluster, completing its bytes
/// on each one's barrier at `bar`'s offset.
__device__ inline void load_2d_multicast(void* dst, const kiln::TensorMap* map, int c0, int c1,
                                         unsigned long long* bar, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(kiln::tma::shared_address(dst)),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1),
      "r"(kiln::tma::shared_address(bar)), "h"(mask)
      : "memory");
}
/// An arrival at block `rank`'s barrier at `bar`'s offset (no cluster-scope release: slower).
__device__ inline void arrive_remote(unsigned long long* bar, unsigned rank) {
  unsigned a;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(a)
               : "r"(kiln::tma::shared_address(bar)), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(a) : "memory");
}
__device__ inline void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive;\nbarrier.cluster.wait;" ::: "memory");
}
#endif

/// An f16 value in [-1, 1), a hash of index `i` and `seed`, as its bits: random data, for the
/// products' power as with real data.
__device__ inline unsigned short random_half(size_t i, unsigned seed) {
  unsigned h = unsigned(i) * 2654435761u ^ seed;
  h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
  return __half_as_ushort(__float2half(float(h & 0xFFFF) / 32768.0f - 1.0f));
}

__global__ void fill_random(unsigned short* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = random_half(i, seed);
}

inline kiln::TensorMap to_kiln(const CUtensorMap& m) {
  kiln::TensorMap t;
  std::memcpy(&t, &m, sizeof(t));
  return t;
}

/// A tiled map of f16 `rank` dims (innermost first), 128-byte swizzled, zeros outside.
inline kiln::TensorMap encode_tiled(void* p, cuuint32_t rank, const cuuint64_t* dims,
                                    const cuuint64_t* strides, const cuuint32_t* box,
                                    const cuuint32_t* steps) {
  CUtensorMap m;
  CHECK(cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, rank, p, dims, strides, box,
                               steps, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                               CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return to_kiln(m);
}

/// [outer, inner] f16 rows of `inner` elements, boxes of 64 x `rows`.
inline kiln::TensorMap tiled_map(void* p, cuuint64_t inner, cuuint64_t outer, cuuint32_t rows) {
  const cuuint64_t dims[2] = {inner, outer}, strides[1] = {inner * 2};
  const cuuint32_t box[2] = {64, rows}, ones[2] = {1, 1};
  return encode_tiled(p, 2, dims, strides, box, ones);
}

/// x's dims ([n, hw, hw, c] channels_last: C, W, H, N innermost first) and byte strides.
struct XDims {
  cuuint64_t dims[4], strides[3];
  explicit XDims(const Shape& s)
      : dims{cuuint64_t(s.c), cuuint64_t(s.hw), cuuint64_t(s.hw), cuuint64_t(s.n)},
        strides{cuuint64_t(s.c) * 2, cuuint64_t(s.c) * 2 * s.hw,
                cuuint64_t(s.c) * 2 * s.hw * s.hw} {}
};

/// x's im2col map as kiln encodes it (engine/runtime/tensor_map.cpp): 128 pixels of 64
/// channels a copy, the 3x3 window with padding 1, every stride-th pixel.
inline kiln::TensorMap im2col_map(void* p, const Shape& s) {
  CUtensorMap m;
  const XDims x(s);
  int lower[2] = {-1, -1}, upper[2] = {-1, -1};
  cuuint32_t steps[4] = {1, cuuint32_t(s.stride), cuuint32_t(s.stride), 1};
  CHECK(cuTensorMapEncodeIm2col(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, p, x.dims, x.strides,
                                lower, upper, 64, 128, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return to_kiln(m);
}

/// x as whole output rows: a tiled box of [64 channels, q pixels, 128 / q rows] of the input,
/// every stride-th element, zeros outside (the alternative to im2col where q divides 128).
inline kiln::TensorMap rows_map(void* p, const Shape& s) {
  const XDims x(s);
  const int q = s.q(), rows = 128 / q > 0 ? 128 / q : 1;
  const cuuint32_t box[4] = {64, cuuint32_t(std::min(q, 128) * s.stride),
                             cuuint32_t(rows * s.stride), 1};
  const cuuint32_t steps[4] = {1, cuuint32_t(s.stride), cuuint32_t(s.stride), 1};
  return encode_tiled(p, 4, x.dims, x.strides, box, steps);
}

/// x and w of a row on the GPU, zeros or random, and a buffer of each block's cycles.
struct Buffers {
  void *x = nullptr, *w = nullptr;
  unsigned long long* cycles = nullptr;
  Buffers(const Shape& s, bool random, int records) {
    CHECK(cudaMalloc(&x, s.x_elems() * 2));
    CHECK(cudaMalloc(&w, s.w_elems() * 2));
    CHECK(cudaMalloc(&cycles, size_t(records) * 8));
    CHECK(cudaMemset(cycles, 0, size_t(records) * 8));
    CHECK(cudaMemset(x, 0, s.x_elems() * 2));
    CHECK(cudaMemset(w, 0, s.w_elems() * 2));
    if (random) {
      fill_random<<<264, 256>>>(static_cast<unsigned short*>(x), s.x_elems(), 1);
      fill_random<<<264, 256>>>(static_cast<unsigned short*>(w), s.w_elems(), 2);
    }
  }
  ~Buffers() { cudaFree(x), cudaFree(w), cudaFree(cycles); }
  /// The records sorted (`n` of them, from record `first`).
  std::vector<unsigned long long> sorted(int n, int first = 0) const {
    std::vector<unsigned long long> c(n);
    CHECK(cudaMemcpy(c.data(), cycles + first, size_t(n) * 8, cudaMemcpyDeviceToHost));
    std::sort(c.begin(), c.end());
    return c;
  }
};

/// The median of 10 timed launches (after 2 untimed), each between its own pair of events.
template <class F>
float median_us(F launch) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  std::vector<float> ms;
  for (int r = 0; r < 12; ++r) {
    cudaEventRecord(e0);
    launch();
    cudaEventRecord(e1);
    CHECK(cudaEventSynchronize(e1));
    float t;
    cudaEventElapsedTime(&t, e0, e1);
    if (r >= 2) ms.push_back(t);
  }
  CHECK(cudaGetLastError());
  cudaEventDestroy(e0), cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2] * 1e3f;
}

/// A launch of `kernel` on a row's blocks in clusters of `cluster` along x.
template <class... P, class... A>
void launch_clusters(void (*kernel)(P...), int blocks, int threads, int shared, int cluster,
                     A... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks), cfg.blockDim = dim3(threads), cfg.dynamicSmemBytes = shared;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = cluster, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
  cfg.attrs = &attr, cfg.numAttrs = 1;
  CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
}
