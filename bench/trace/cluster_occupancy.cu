// How many thread-block clusters of each size fit the GPU at once (cudaOccupancyMaxActiveClusters)
// for a block of 384 threads (the wgmma kernels') and a range of shared-memory sizes: whether a
// split-K launch of 128 blocks in clusters of 4 or 8 runs in one wave.
// Build and run on the GPU machine: bench/trace/probes.sh cluster_occupancy.
#include <cuda_runtime.h>

#include <cstdio>

__global__ void __launch_bounds__(384, 1) block(int* sink) {
  extern __shared__ int smem[];
  if (threadIdx.x == 0 && sink) *sink = smem[0];
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaFuncSetAttribute(block, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024);
  cudaFuncSetAttribute(block, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  std::printf("%d SMs; clusters that fit at once (blocks in parentheses), 384 threads a block\n",
              sms);
  for (int kb : {100, 150, 180, 200, 227}) {
    std::printf("%3d KB:", kb);
    for (int size : {1, 2, 3, 4, 6, 8, 16}) {
      cudaLaunchConfig_t cfg = {};
      cudaLaunchAttribute attr;
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = size, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
      cfg.gridDim = dim3(size * 16), cfg.blockDim = dim3(384);
      cfg.dynamicSmemBytes = size_t(kb) * 1024, cfg.attrs = &attr, cfg.numAttrs = 1;
      int n = 0;
      const cudaError_t e = cudaOccupancyMaxActiveClusters(&n, block, &cfg);
      if (e != cudaSuccess)
        std::printf("  %d: %s", size, cudaGetErrorString(e)), cudaGetLastError();
      else
        std::printf("  %d: %d (%d)", size, n, n * size);
    }
    std::printf("\n");
  }
  return 0;
}
