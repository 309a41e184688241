// kiln's wgmma convolution ring with nothing else: one producer thread issuing A's im2col box
// and B's box a stage once both consumer groups released it, two consumer warpgroups running
// gemm_sm90.cuh's `products` loop (wait for the stage, four wgmma m64nBNk16 from shared memory,
// commit, wait for the step before, release it). No epilogue and no split sum: the cycles a K
// step of the main loop, beside tma_probe.cu's loads alone and wgmma_probe.cu's products alone.
// `loads` picks what each stage brings (1 A, 2 B, 0 nothing: the barriers' protocol alone; what
// it does not bring stays in the stage from the start): the ring's step against its bytes.
// Build and run on the GPU machine: bench/trace/probes.sh (with the argument `contention`, only
// the rows of loads and products side by side with no barriers between them).
#include "probe_common.cuh"

#include <kiln/wgmma.cuh>

// Groups 2: kiln's two consumer warpgroups, 64 rows each; 1: one warpgroup issuing both 64-row
// halves' products a K slice (its two accumulator arrays), as a one-warpgroup tile would.
// Pending: the steps of products a consumer group keeps in flight (kiln's 1: it waits for the
// step before and releases its stage), so that a stage is held Pending + 1 uses.
// Lean: the operands' descriptors made once, a step's and a K slice's offsets added to their
// address field (16-byte units), instead of a descriptor built from a pointer for each wgmma.
template <int Stages, int BN, int Groups = 2, bool Lean = false, int Pending = 1>
__global__ void __launch_bounds__(128 * (Groups + 1), 1)
    ring(const __grid_constant__ kiln::TensorMap a_map,
         const __grid_constant__ kiln::TensorMap b_map, Shape s, int loads, int protocol,
         unsigned long long* cycles, float* sink) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ unsigned long long full[Stages], empty[Stages];
  const int a_bytes = 128 * 128, stage = stage_bytes(BN);
  const int pq = s.q() * s.q(), tile = blockIdx.x / s.split, part = blockIdx.x % s.split;
  const int m0 = tile % s.m_tiles() * 128, n0 = tile / s.m_tiles() * BN;
  const int cb = s.c / 64, steps = s.steps(), first = part * steps, group = threadIdx.x / 128;
  if (threadIdx.x == 0)
    for (int i = 0; i < Stages; ++i)
      kiln::tma::barrier_init(&full[i], 1), kiln::tma::barrier_init(&empty[i], Groups);
  __syncthreads();
  const long long t0 = clock64();
  if (group == 0) {
    if (threadIdx.x != 0) return;
    unsigned long long g0, g1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    const int img = m0 / pq, pix = m0 % pq;
    const int y0 = pix / s.q() * s.stride - 1, x0 = pix % s.q() * s.stride - 1;
    for (int j = 0; j < steps; ++j) {
      if (j >= Stages && (protocol & 2))
        kiln::tma::barrier_wait(&empty[j % Stages], (j / Stages - 1) & 1);
      else if (j >= Stages && loads)  // no consumer waits: the stage's last bytes, before re-arming
        kiln::tma::barrier_wait(&full[j % Stages], (j / Stages - 1) & 1);
      const int q = first + j, rs = q / cb, c = q % cb * 64;
      unsigned long long* bar = &full[j % Stages];
      unsigned char* dst = smem + (j % Stages) * stage;
      kiln::tma::arrive_expect_bytes(bar, (loads & 1 ? a_bytes : 0) + (loads & 2 ? BN * 128 : 0));
      if (loads & 1)
        kiln::tma::load_im2col_4d(dst, &a_map, c, x0, y0, img, (unsigned short)(rs % 3),
                                  (unsigned short)(rs / 3), bar);
      if (loads & 2) kiln::tma::load_2d(dst + a_bytes, &b_map, rs * s.c + c, n0, bar);
    }
    if ((protocol & 3) != 0 || !loads) return;
    // No consumer paces the loads: the time until the last stages landed, in cycles and in ns.
    for (int j = steps > Stages ? steps - Stages : 0; j < steps; ++j)
      kiln::tma::barrier_wait(&full[j % Stages], (j / Stages) & 1);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    cycles[2 * gridDim.x + blockIdx.x] = clock64() - t0;
    cycles[3 * gridDim.x + blockIdx.x] = g1 - g0;
    return;
  }
  if (protocol & 4) return;  // no products: the loads alone
  const int c = group - 1;
  constexpr int H = 3 - Groups;  // 64-row halves a consumer group takes
  float acc[H][BN / 2];
#pragma unroll
  for (int h = 0; h < H; ++h) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[h][i] = 0.0f;
    kiln::wgmma::fence_operands(acc[h]);
  }
  const unsigned long long a0 = kiln::wgmma::descriptor(smem + c * 64 * 128, 16, 1024);
  const unsigned long long b0 = kiln::wgmma::descriptor(smem + a_bytes, 16, 1024);
  for (int j = 0; j < steps; ++j) {
    if (protocol & 1) kiln::tma::barrier_wait(&full[j % Stages], (j / Stages) & 1);
    const unsigned char* st = smem + (j % Stages) * stage;
    const unsigned long long so = unsigned((j % Stages) * stage) >> 4;
    kiln::wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const auto db = Lean ? b0 + so + kk * 2
                           : kiln::wgmma::descriptor(st + a_bytes + kk * 32, 16, 1024);
#pragma unroll
      for (int h = 0; h < H; ++h) {
        const auto da = Lean ? a0 + so + h * 512 + kk * 2
                             : kiln::wgmma::descriptor(st + (c + h) * 64 * 128 + kk * 32, 16, 1024);
        kiln::wgmma::Wgmma<kiln::half, BN>::template run<0>(acc[h], da, db, 1);
      }
    }
    kiln::wgmma::commit();
    kiln::wgmma::wait<Pending>();
    if ((protocol & 2) && j >= Pending && threadIdx.x % 128 == 0)
      kiln::tma::arrive(&empty[(j - Pending) % Stages]);
  }
  kiln::wgmma::wait<0>();
#pragma unroll
  for (int h = 0; h < H; ++h) kiln::wgmma::fence_operands(acc[h]);
  if (threadIdx.x % 128 == 0) cycles[blockIdx.x * 2 + c] = clock64() - t0;
  float sum = 0.0f;
#pragma unroll
  for (int h = 0; h < H; ++h)
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) sum += acc[h][i];
  if (sum == 1234.5f) *sink = sum;
#endif
}

/// The ring on a row's blocks (`random` data or zeros; the split's blocks in clusters or not).
template <int Stages, int BN, int Groups = 2, bool Lean = false, int Pending = 1>
static void run(const char* name, const Shape& s, bool random, bool cluster, int loads = 3,
                int protocol = 3) {
  const Buffers b(s, random, 4 * s.blocks());  // the consumers', then the producer's cycles, ns
  float* sink;
  CHECK(cudaMalloc(&sink, 4));
  const auto a = im2col_map(b.x, s), bw = tiled_map(b.w, 9 * s.c, s.k, BN);
  const int shared = Stages * stage_bytes(BN);
  auto* kernel = ring<Stages, BN, Groups, Lean, Pending>;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  const float us = median_us([&] {
    launch_clusters(kernel, s.blocks(), 128 * (Groups + 1), shared, cluster ? s.split : 1, a, bw,
                    s, loads, protocol, b.cycles, sink);
  });
  auto c = b.sorted(2 * s.blocks());
  if (Groups == 1) c.erase(c.begin(), c.begin() + s.blocks());  // the unused records (zeros)
  std::printf("%-6s ring (%s%s + products of %d group(s)%s, %d step(s) in flight, no "
              "epilogue) 128x%d, stages %d, %s%s: %d blocks x %d steps, %.1f us, a step %.0f "
              "cycles (median consumer; slowest %.0f)\n",
              name,
              loads == 3   ? "A and B loaded"
              : loads == 1 ? "A loaded"
              : loads == 2 ? "B loaded"
                           : "nothing loaded, the barriers alone",
              protocol == 3   ? ""
              : protocol == 2 ? " (consumers release stages, wait for none)"
              : protocol == 4 ? " (no barriers, no products)"
                              : " (no barriers)",
              Groups, Lean ? ", lean descriptors" : "", Pending,
              BN, Stages, random ? "random data" : "zeros",
              cluster ? ", the split's blocks in clusters" : "", s.blocks(), s.steps(), us,
              double(c[c.size() / 2]) / s.steps(), double(c.back()) / s.steps());
  if ((protocol & 3) == 0 && loads) {  // the loads' own pace, and the clock it ran at
    const auto pc = b.sorted(s.blocks(), 2 * s.blocks()), ns = b.sorted(s.blocks(), 3 * s.blocks());
    const double cyc = double(pc[pc.size() / 2]), t = double(ns[ns.size() / 2]);
    std::printf("%-6s   the producer (loads not paced by consumers): a step %.0f cycles, %.3f us "
                "(median block); the SM clock %.2f GHz\n",
                name, cyc / s.steps(), t / 1e3 / s.steps(), cyc / t);
  }
  cudaFree(sink);
}

// Loads and products side by side with no barrier between them (the producer streams every
// stage's bytes without waiting, the consumers multiply whatever the stages hold): whether the
// loads' writes into shared memory slow the products' reads of it, apart from the ring's
// protocol. Beside each, the same products with nothing loaded and the same loads with no
// products; the producer times its own loads (cycles and ns: the SM clock of the run too).
static void contention(const Shape& c1280, const Shape& long_k, const Shape& n8) {
  for (int loads : {0, 3, 1, 2}) {
    run<4, 80, 2, true>("c1280", c1280, true, true, loads, 0);
    run<4, 80, 2, true>("longK", long_k, true, true, loads, 0);
    run<4, 256, 2, true>("n8", n8, true, false, loads, 0);
  }
  for (int loads : {3, 1, 2}) {  // the same loads with no products beside them
    run<4, 80, 2, true>("c1280", c1280, true, true, loads, 4);
    run<4, 80, 2, true>("longK", long_k, true, true, loads, 4);
  }
  run<4, 256, 2, true>("n8", n8, true, false, 3, 4);
  run<8, 80, 2, true>("longK", long_k, true, true, 3, 4);  // 8 stages
  // How many blocks read the same bytes at once, 128 blocks of 90 steps: c1280's A is read by
  // the 16 blocks of a row of tiles, its B by 4; here A by 1 (and B by all 128), or A by 32.
  Shape a_own{64, 16, 640, 80, 80, 1}, a_by32{2, 16, 640, 2560, 80, 1};
  for (int loads : {1, 2, 3}) {
    run<4, 80, 2, true>("A own", a_own, true, false, loads, 4);
    run<4, 80, 2, true>("A by32", a_by32, true, false, loads, 4);
  }
}

int main(int argc, char** argv) {
  CHECK(cuInit(0));
  CHECK(cudaFree(nullptr));  // the runtime's context, current for the driver's calls
  Shape c1280{2, 16, 1280, 1280, 80, 2}, c640{2, 32, 640, 640, 160, 2},
      c320{2, 64, 320, 320, 160, 1}, n8{8, 64, 256, 256, 256, 1}, s2{2, 64, 320, 320, 80, 2};
  s2.stride = 2;
  Shape long_k{2, 16, 10240, 1280, 80, 2};  // K 8 times longer (720 steps a block)
  if (argc > 1 && std::strcmp(argv[1], "contention") == 0) {
    run<4, 80>("c1280", c1280, false, false);  // warms clocks and memory
    contention(c1280, long_k, n8);
    return 0;
  }
  run<4, 80>("c1280", c1280, false, false);  // warms clocks and memory; zeros beside random
  for (bool random : {false, true}) {
    run<4, 80>("c1280", c1280, random, true);
    run<4, 80>("s2", s2, random, true);
    run<4, 160>("c640", c640, random, true);
    run<4, 160>("c320", c320, random, false);
    run<4, 256>("n8", n8, random, false);
  }
  run<8, 80>("c1280", c1280, true, true);
  run<8, 80>("s2", s2, true, true);
  run<4, 80>("c1280", c1280, true, true, 1);  // B's bytes not written: only A's
  run<4, 80>("c1280", c1280, true, true, 2);  // only B's
  run<4, 256>("n8", n8, true, false, 1);
  run<4, 256>("n8", n8, true, false, 2);
  Shape c1280_64{2, 16, 1280, 1280, 64, 1};  // cuDNN's tile: 80 blocks, K whole (180 steps)
  run<4, 64>("c1280", c1280_64, true, false);
  run<6, 64>("c1280", c1280_64, true, false);
  run<4, 64, 1>("c1280", c1280_64, true, false);
  run<4, 80, 1>("c1280", c1280, true, true);
  // the ring's barriers with no bytes: all, the consumers' releases alone (the producer still
  // waits for them; no consumer waits for a stage), none (waiting on full stages alone would let
  // the producer lap the consumers)
  for (int protocol : {3, 2, 0})
    run<4, 80>("c1280", c1280, true, true, 0, protocol);
  run<4, 256>("n8", n8, true, false, 0);
  // K 8 times longer: a step's own cost apart from a block's fixed costs
  for (int protocol : {3, 0}) run<4, 80>("longK", long_k, true, true, 0, protocol);
  run<4, 80>("longK", long_k, true, true);
  for (int protocol : {3, 0}) run<4, 80, 2, true>("c1280", c1280, true, true, 0, protocol);
  run<4, 80, 2, true>("c1280", c1280, true, true);
  run<4, 80, 2, true>("longK", long_k, true, true);
  run<8, 80, 2, false, 2>("c1280", c1280, true, true);  // two steps of products in flight
  run<8, 80, 2, true, 2>("c1280", c1280, true, true);
  run<8, 80, 2, true, 2>("s2", s2, true, true);
  contention(c1280, long_k, n8);
  return 0;
}
