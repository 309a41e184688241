// How fast kiln's wgmma consumers run their products with the operands already in shared
// memory: the loop of gemm_sm90.cuh's `products` (per 64-byte K step of a stage, four wgmma
// m64nBNk16 reading A and B from a 128-byte swizzled stage, a commit, a wait for the step before)
// with no loads and no barriers, for one or two consumer warpgroups. The cycles a step against
// the tensor cores' peak say whether a tile width is bound by its products.
// Build and run on the GPU machine: bench/trace/probes.sh.
#include "probe_common.cuh"

#include <kiln/wgmma.cuh>

constexpr int kStages = 4, kSteps = 2000;

template <int BN, int Groups>
__global__ void __launch_bounds__(128 * (Groups + 1), 1) products(unsigned long long* cycles,
                                                                  float* sink, bool random) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(1024) unsigned char smem[];
  // zeros, or random halves in [-1, 1) (the tensor cores' power as with real data)
  for (int i = threadIdx.x; i < kStages * stage_bytes(BN) / 2; i += blockDim.x)
    reinterpret_cast<unsigned short*>(smem)[i] = random ? random_half(i, 0) : 0;
  __syncthreads();
  const int group = threadIdx.x / 128;
  if (group == 0) return;  // the producer's warpgroup: idle here
  const int c = group - 1;
  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
  const long long t0 = clock64();
  for (int it = 0; it < kSteps; ++it) {
    const unsigned char* st = smem + it % kStages * stage_bytes(BN);
    kiln::wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const auto da = kiln::wgmma::descriptor(st + c * 64 * 128 + kk * 32, 16, 1024);
      const auto db = kiln::wgmma::descriptor(st + 128 * 128 + kk * 32, 16, 1024);
      kiln::wgmma::Wgmma<kiln::half, BN>::template run<0>(acc, da, db, 1);
    }
    kiln::wgmma::commit();
    kiln::wgmma::wait<1>();
  }
  kiln::wgmma::wait<0>();
  const long long t = clock64() - t0;
  if (threadIdx.x % 128 == 0) cycles[blockIdx.x * Groups + c] = t;
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) s += acc[i];
  if (s != 0.0f) *sink = s;
#endif
}

template <int BN, int Groups>
static void run(bool random = false) {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  unsigned long long* cyc;
  float* sink;
  cudaMalloc(&cyc, sms * Groups * 8);
  cudaMalloc(&sink, 4);
  const int shared = kStages * stage_bytes(BN);
  cudaFuncSetAttribute(products<BN, Groups>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
  for (int r = 0; r < 3; ++r)
    products<BN, Groups><<<sms, 128 * (Groups + 1), shared>>>(cyc, sink, random);
  if (cudaDeviceSynchronize() != cudaSuccess) {
    std::printf("BN %d groups %d: %s\n", BN, Groups, cudaGetErrorString(cudaGetLastError()));
    std::exit(1);
  }
  std::vector<unsigned long long> c(sms * Groups);
  cudaMemcpy(c.data(), cyc, c.size() * 8, cudaMemcpyDeviceToHost);
  std::sort(c.begin(), c.end());
  const double per = double(c[c.size() / 2]) / kSteps;
  const double peak = Groups * 4.0 * 64 * BN * 16 * 2 / 4096;  // dense f16 FLOP a cycle an SM
  std::printf("wgmma m64n%dk16 x 4 a step, %d consumer group(s)%s: %.0f cycles a step (median), "
              "%.0f at the tensor cores' peak (%.0f %%)\n",
              BN, Groups, random ? ", random data" : ", zeros", per, peak, 100.0 * peak / per);
  cudaFree(cyc), cudaFree(sink);
}

int main() {
  run<64, 1>(), run<64, 2>();
  run<80, 1>(), run<80, 2>();
  run<128, 1>(), run<128, 2>();
  run<160, 1>(), run<160, 2>();
  run<256, 1>(), run<256, 2>();
  run<80, 2>(true), run<160, 2>(true), run<256, 2>(true);
  return 0;
}
