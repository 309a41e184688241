// How fast TMA alone feeds a convolution's ring: the loads of kiln's wgmma convolution
// (conv_sm90.cuh's K steps: A's im2col box, B's tiled box) issued by one thread a block into
// S stages and waited for, with no products: the time a step is the loads' own. Variants: A
// as a tiled box instead of im2col; a stage kept `hold` uses after it lands (the consumers'
// products keep two); A shared by the blocks of a cluster along N (each loads a slice and
// multicasts it). And a whole-GPU read, each SM its own share, for how evenly SMs draw memory.
// Build and run on the GPU machine: bench/trace/probes.sh (with the argument `multicast`, only
// the multicast rows at 4 and at deeper rings, beside their unshared baselines).
#include "probe_common.cuh"

// Mode bits: 1 A's im2col box, 2 B's box, 4 A as a tiled box of x seen as [pixels, C], 8 A as
// a tiled box of whole output rows (rows_map) at the tap's shift.
template <int Stages>
__global__ void __launch_bounds__(128, 1)
    loads(const __grid_constant__ kiln::TensorMap a_im2col,
          const __grid_constant__ kiln::TensorMap a_tiled,
          const __grid_constant__ kiln::TensorMap a_rows,
          const __grid_constant__ kiln::TensorMap b_map, Shape s, int mode,
          unsigned long long* cycles) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ unsigned long long full[Stages];
  const int a_bytes = 128 * 128, b_bytes = s.bn * 128, stage = stage_bytes(s.bn);
  const int pq = s.q() * s.q(), tile = blockIdx.x / s.split, part = blockIdx.x % s.split;
  const int m0 = tile % s.m_tiles() * 128, n0 = tile / s.m_tiles() * s.bn;
  const int cb = s.c / 64, steps = s.steps(), first = part * steps;
  if (threadIdx.x != 0) return;
  for (int i = 0; i < Stages; ++i) kiln::tma::barrier_init(&full[i], 1);
  const int img = m0 / pq, pix = m0 % pq;
  const int y0 = pix / s.q() * s.stride - 1, x0 = pix % s.q() * s.stride - 1;
  auto issue = [&](int j) {
    const int q = first + j, rs = q / cb, c = q % cb * 64;
    unsigned long long* bar = &full[j % Stages];
    unsigned char* dst = smem + (j % Stages) * stage;
    kiln::tma::arrive_expect_bytes(bar, (mode & 13 ? a_bytes : 0) + (mode & 2 ? b_bytes : 0));
    if (mode & 1)
      kiln::tma::load_im2col_4d(dst, &a_im2col, c, x0, y0, img, (unsigned short)(rs % 3),
                                (unsigned short)(rs / 3), bar);
    if (mode & 4) kiln::tma::load_2d(dst, &a_tiled, c, m0, bar);
    if (mode & 8) load_4d(dst, &a_rows, c, x0 + rs % 3, y0 + rs / 3, img, bar);
    if (mode & 2) kiln::tma::load_2d(dst + a_bytes, &b_map, rs * s.c + c, n0, bar);
  };
  const long long t0 = clock64();
  for (int j = 0; j < Stages && j < steps; ++j) issue(j);
  for (int j = 0; j < steps; ++j) {
    kiln::tma::barrier_wait(&full[j % Stages], (j / Stages) & 1);
    const int next = j - s.hold + Stages;  // a stage is free `hold` uses after it landed
    if (j >= s.hold && next < steps) issue(next);
  }
  cycles[blockIdx.x] = clock64() - t0;
#endif
}

// The same loads with A shared by the CN blocks of a cluster along N: each loads 128 / CN rows
// of A (x seen as [pixels, C]) and multicasts them to all, and its own B; a stage is reused once
// every block of the cluster has seen it land (an empty barrier a stage, arrived at by each).
template <int Stages, int CN>
__global__ void __launch_bounds__(128, 1)
    loads_multicast(const __grid_constant__ kiln::TensorMap a_part,
                    const __grid_constant__ kiln::TensorMap b_map, Shape s,
                    unsigned long long* cycles) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(1024) unsigned char smem[];
  __shared__ unsigned long long full[Stages], empty[Stages];
  const int a_bytes = 128 * 128, b_bytes = s.bn * 128, stage = stage_bytes(s.bn);
  const int rank = blockIdx.x % CN, cid = blockIdx.x / CN, part = cid % s.split;
  const int rest = cid / s.split, m0 = rest % s.m_tiles() * 128;
  const int n0 = (rest / s.m_tiles() * CN + rank) * s.bn;
  const int cb = s.c / 64, steps = s.steps(), first = part * steps;
  if (threadIdx.x == 0)
    for (int i = 0; i < Stages; ++i)
      kiln::tma::barrier_init(&full[i], 1), kiln::tma::barrier_init(&empty[i], CN);
  cluster_sync_all();
  if (threadIdx.x != 0) return;
  auto issue = [&](int j) {
    const int q = first + j, rs = q / cb, c = q % cb * 64;
    unsigned long long* bar = &full[j % Stages];
    unsigned char* dst = smem + (j % Stages) * stage;
    kiln::tma::arrive_expect_bytes(bar, a_bytes + b_bytes);
    load_2d_multicast(dst + rank * (a_bytes / CN), &a_part, c, m0 + rank * (128 / CN), bar,
                      (unsigned short)((1 << CN) - 1));
    kiln::tma::load_2d(dst + a_bytes, &b_map, rs * s.c + c, n0, bar);
  };
  const long long t0 = clock64();
  for (int j = 0; j < Stages && j < steps; ++j) issue(j);
  for (int j = 0; j < steps; ++j) {
    kiln::tma::barrier_wait(&full[j % Stages], (j / Stages) & 1);
    for (int r = 0; r < CN; ++r) arrive_remote(&empty[j % Stages], r);
    if (j + Stages < steps) {
      kiln::tma::barrier_wait(&empty[j % Stages], (j / Stages) & 1);
      issue(j + Stages);
    }
  }
  cycles[blockIdx.x] = clock64() - t0;
  // no block exits while another may still arrive at its barriers
  for (int j = steps; j < steps + Stages && j >= Stages; ++j)
    kiln::tma::barrier_wait(&empty[j % Stages], (j / Stages - 1) & 1);
#endif
}

static void report(const char* name, const char* what, const Shape& s, int stages, float us,
                   const std::vector<unsigned long long>& c, double bytes) {
  const double step = double(c[c.size() / 2]) / s.steps();
  std::printf("%-6s %s, stages %d, hold %d: %d blocks x %d steps, %.1f us, a step %.0f cycles "
              "(median block; slowest %.0f), %.1f bytes landed a cycle an SM\n",
              name, what, stages, s.hold, int(c.size()), s.steps(), us, step,
              double(c.back()) / s.steps(), bytes / step);
}

template <int Stages>
static void run(const char* name, const Shape& s, int mode) {
  const Buffers b(s, false, s.blocks());
  const auto ai = im2col_map(b.x, s), at = tiled_map(b.x, s.c, s.x_elems() / s.c, 128);
  const auto ar = rows_map(b.x, s), bw = tiled_map(b.w, 9 * s.c, s.k, s.bn);
  const int shared = Stages * stage_bytes(s.bn);
  CHECK(cudaFuncSetAttribute(loads<Stages>, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  const float us = median_us(
      [&] { loads<Stages><<<s.blocks(), 128, shared>>>(ai, at, ar, bw, s, mode, b.cycles); });
  char what[64];
  std::snprintf(what, sizeof what, "loads alone (%s%s)",
                mode & 1 ? "A im2col" : mode & 4 ? "A tiled" : mode & 8 ? "A rows" : "",
                mode & 2 ? (mode & 13 ? " + B" : "B") : "");
  report(name, what, s, Stages, us, b.sorted(s.blocks()),
         (mode & 13 ? 128 * 128 : 0) + (mode & 2 ? s.bn * 128 : 0));
}

template <int Stages, int CN>
static void run_multicast(const char* name, const Shape& s) {
  const Buffers b(s, false, s.blocks());
  const auto a = tiled_map(b.x, s.c, s.x_elems() / s.c, 128 / CN);
  const auto bw = tiled_map(b.w, 9 * s.c, s.k, s.bn);
  const int shared = Stages * stage_bytes(s.bn);
  auto* kernel = loads_multicast<Stages, CN>;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  const float us = median_us(
      [&] { launch_clusters(kernel, s.blocks(), 128, shared, CN, a, bw, s, b.cycles); });
  char what[64];
  std::snprintf(what, sizeof what, "loads, A multicast over %d + B", CN);
  report(name, what, s, Stages, us, b.sorted(s.blocks()), 128 * 128 + s.bn * 128);
}

// Each block reads its own `per_block` bytes (16-byte loads, 8 in flight a thread) and records
// its cycles and its SM: whether SMs draw equal shares of the memory's bandwidth when all read.
__global__ void __launch_bounds__(512) stream(const uint4* x, long long per_block,
                                              unsigned long long* cycles, unsigned* sm,
                                              unsigned* sink) {
  const uint4* p = x + blockIdx.x * (per_block / 16);
  const long long n = per_block / 16;
  __syncthreads();
  const long long t0 = clock64();
  unsigned acc = 0;
  for (long long i = threadIdx.x; i < n; i += 8 * 512) {
    uint4 v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) v[u] = i + u * 512 < n ? __ldcs(p + i + u * 512) : uint4{};
#pragma unroll
    for (int u = 0; u < 8; ++u) acc ^= v[u].x ^ v[u].w;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    cycles[blockIdx.x] = clock64() - t0;
    unsigned id;
    asm("mov.u32 %0, %%smid;" : "=r"(id));
    sm[blockIdx.x] = id;
  }
  if (acc == 0x12345678u) *sink = acc;
}

static void stream_probe(long long per_block) {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  uint4* x;
  unsigned long long* cyc;
  unsigned *sm, *sink;
  CHECK(cudaMalloc(&x, per_block * sms));
  CHECK(cudaMemset(x, 1, per_block * sms));
  CHECK(cudaMalloc(&cyc, sms * 8));
  CHECK(cudaMalloc(&sm, sms * 4));
  CHECK(cudaMalloc(&sink, 4));
  const float us = median_us([&] { stream<<<sms, 512>>>(x, per_block, cyc, sm, sink); });
  std::vector<unsigned long long> c(sms);
  std::vector<unsigned> id(sms);
  CHECK(cudaMemcpy(c.data(), cyc, sms * 8, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(id.data(), sm, sms * 4, cudaMemcpyDeviceToHost));
  std::vector<std::pair<unsigned long long, unsigned>> by(sms);
  for (int i = 0; i < sms; ++i) by[i] = {c[i], id[i]};
  std::sort(by.begin(), by.end());
  std::printf("stream %lld KB a block x %d: %.1f us, %.0f GB/s; a block's cycles min %llu (SM %u), "
              "p10 %llu, median %llu, p90 %llu, max %llu (SM %u)\n",
              per_block >> 10, sms, us, double(per_block) * sms / (us * 1e3), by[0].first,
              by[0].second, by[sms / 10].first, by[sms / 2].first, by[sms * 9 / 10].first,
              by.back().first, by.back().second);
  cudaFree(x), cudaFree(cyc), cudaFree(sm), cudaFree(sink);
}

int main(int argc, char** argv) {
  CHECK(cuInit(0));
  CHECK(cudaFree(nullptr));  // the runtime's context, current for the driver's calls
  stream_probe(8 << 20);     // first: clocks and memory warmed before the loads are timed
  Shape c1280{2, 16, 1280, 1280, 80, 2}, c640{2, 32, 640, 640, 160, 2},
      c320{2, 64, 320, 320, 160, 1}, n8{8, 64, 256, 256, 256, 1}, s2{2, 64, 320, 320, 80, 2};
  s2.stride = 2;
  if (argc > 1 && std::strcmp(argv[1], "multicast") == 0) {
    // Whether a deeper ring lets the cluster's shared release keep up: the requests an SM
    // makes fall with the multicast (A / CN + B), so a bound on requests would show here.
    // (the multicast loads A as tiled boxes: mode 6, tiled A + B, is its unshared baseline)
    run<4>("c1280", c1280, 6), run<8>("c1280", c1280, 6);
    run_multicast<4, 2>("c1280", c1280), run_multicast<8, 2>("c1280", c1280);
    run_multicast<4, 4>("c1280", c1280), run_multicast<8, 4>("c1280", c1280);
    run<4>("c640", c640, 6), run_multicast<4, 2>("c640", c640), run_multicast<6, 2>("c640", c640);
    return 0;
  }
  for (int mode : {3, 1, 2, 10, 6}) run<4>("c1280", c1280, mode);
  for (int mode : {3, 10}) run<4>("s2", s2, mode);
  for (int mode : {3, 6}) run<4>("c640", c640, mode);
  run<4>("c320", c320, 3);
  run<4>("n8", n8, 3);
  for (Shape* sh : {&c1280, &s2}) sh->hold = 2;  // the consumers' two stages
  run<4>("c1280", c1280, 3), run<6>("c1280", c1280, 3), run<8>("c1280", c1280, 3);
  run<4>("s2", s2, 3), run<8>("s2", s2, 3);
  for (Shape* sh : {&c1280, &s2}) sh->hold = 0;
  run_multicast<4, 2>("c1280", c1280), run_multicast<4, 4>("c1280", c1280);
  run_multicast<4, 2>("s2", s2), run_multicast<4, 4>("s2", s2);
  run_multicast<4, 2>("c640", c640), run_multicast<4, 4>("c640", c640);
  stream_probe(1 << 20);
  stream_probe(8 << 20);
  return 0;
}
