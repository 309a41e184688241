// The tensor-core pieces of gfn_leapfrog (leapfrog.cuh): Gamma(v) = (v U)^2 W^T for 16 tokens as
// two warp-wide MMAs, h = v U (16 x D times D x R) and g = h^2 W^T (16 x R times R x D).
//
// Layout. A thread (lane = 4 q + t, PTX's fragment layout: rows q and q + 8 of the tile) owns,
// in each row, 16-byte vectors of the state: E = 16 / sizeof(T) consecutive elements, group k of
// its warp's columns at column 4 E k + E t. The order of d inside a sum is free, and so is the
// order of R: both are chosen so that
//   - g's accumulators for a group are exactly the thread's E elements (the update needs no
//     shuffle, and x, v, f load and store as 16-byte vectors),
//   - those same elements are the A fragments of the next h = v U (vh stays in registers),
//   - h's accumulators are, squared, the A fragments of g = h^2 W^T;
// U's and W's rows are read in the matching order through L1 (both are small and shared by every
// block). Element i of a thread's vector is column 2 t + i % 2 of n8-tile i / 2 of the group.
//
// Precision. f32 runs three TF32 products (hi hi + hi lo + lo hi, lo = x - tf32(x)): products
// as exact as f32 math. f16 and bf16 split the operands that are not already in T (v after a half
// kick, h^2) into hi + lo in T: two products. Accumulators are f32 throughout.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kiln/mma.cuh"

namespace gfn::mma {

using kiln::mma::mma_16816;
using kiln::mma::mma_1688_tf32;
using kiln::mma::to_tf32;

// Bytes of a row of U or W at p (aligned to Bytes, up to 16), as 32-bit words, through L1.
// volatile: the loads stay between the MMAs where they are used (mma.sync is volatile too);
// hoisted to the top, a block's worth of them would take every register.
template <int Bytes>
__device__ inline void load_words(unsigned* w, const void* p) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16 || Bytes == 32, "row span");
  if constexpr (Bytes == 4) {
    asm volatile("ld.global.nc.b32 %0, [%1];" : "=r"(w[0]) : "l"(p));
  } else if constexpr (Bytes == 8) {
    asm volatile("ld.global.nc.v2.b32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
  } else {
#pragma unroll
    for (int k = 0; k < Bytes / 16; ++k)
      asm volatile("ld.global.nc.v4.b32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(w[4 * k]), "=r"(w[4 * k + 1]), "=r"(w[4 * k + 2]), "=r"(w[4 * k + 3])
                   : "l"(static_cast<const char*>(p) + 16 * k));
  }
}

// Storage type T's 16-byte vector <-> E floats.
template <class T>
struct Vec;
template <>
struct Vec<float> {
  static constexpr int E = 4;
  __device__ static void unpack(uint4 u, float (&x)[E]) {
    x[0] = __uint_as_float(u.x), x[1] = __uint_as_float(u.y);
    x[2] = __uint_as_float(u.z), x[3] = __uint_as_float(u.w);
  }
  __device__ static uint4 pack(const float (&x)[E]) {
    return make_uint4(__float_as_uint(x[0]), __float_as_uint(x[1]), __float_as_uint(x[2]),
                      __float_as_uint(x[3]));
  }
};
template <class T2, class T>
struct Vec16 {  // f16 and bf16: T2 the pair type
  static constexpr int E = 8;
  __device__ static float2 to2(unsigned w) {
    const T2 p = *reinterpret_cast<const T2*>(&w);
    return make_float2(float(p.x), float(p.y));
  }
  // x in the low half (the lower k index of an MMA fragment), y in the high.
  __device__ static unsigned of2(float x, float y) {
    T2 p;
    p.x = T(x), p.y = T(y);
    return *reinterpret_cast<const unsigned*>(&p);
  }
  __device__ static void unpack(uint4 u, float (&x)[E]) {
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 p = to2(w[k]);
      x[2 * k] = p.x, x[2 * k + 1] = p.y;
    }
  }
  __device__ static uint4 pack(const float (&x)[E]) {
    return make_uint4(of2(x[0], x[1]), of2(x[2], x[3]), of2(x[4], x[5]), of2(x[6], x[7]));
  }
};
template <>
struct Vec<__nv_bfloat16> : Vec16<__nv_bfloat162, __nv_bfloat16> {};
template <>
struct Vec<__half> : Vec16<__half2, __half> {};

// The products for storage type T with R = 8 NT. `h` is [NT][4]: n8-tile j of h = v U holds
// columns NT c + j (c its column), rows q, q + 8 as PTX's accumulators. `v` is a thread's group:
// [2][E] (rows q, q + 8). `u` points at U's row of the group's first element, column NT q.
template <class T, int R>
struct Products;

template <int R>
struct Products<float, R> {
  static constexpr int E = 4, NT = R / 8;
  struct HSq {       // h^2 as A fragments of g = h^2 W^T (k8-chunk j = h's tile j), split at use:
    float a[NT][4];  // held split, they took the registers that hide the loads
  };
  __device__ static void split(float x, unsigned& hi, unsigned& lo) {
    hi = to_tf32(x);
    lo = to_tf32(x - __uint_as_float(hi));
  }
  __device__ static void mma3(float (&d)[4], const unsigned (&ah)[4], const unsigned (&al)[4],
                              const unsigned (&bh)[2], const unsigned (&bl)[2]) {
    mma_1688_tf32(d, al, bh);
    mma_1688_tf32(d, ah, bl);
    mma_1688_tf32(d, ah, bh);
  }
  // h += v U over the group's 4 E columns: k8-chunk e is elements 2 e, 2 e + 1 (columns 2 t and
  // 2 t + 1 of tile e, k = t and t + 4 of the chunk).
  template <bool kExactA>
  __device__ static void hidden(float (&h)[NT][4], const float (&v)[2][E], const float* u) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      unsigned r0[NT], r1[NT];  // U's rows for k = t and t + 4
      load_words<NT * 4>(r0, u + (2 * e) * R);
      load_words<NT * 4>(r1, u + (2 * e + 1) * R);
      unsigned ah[4], al[4];
      const float a[4] = {v[0][2 * e], v[1][2 * e], v[0][2 * e + 1], v[1][2 * e + 1]};
#pragma unroll
      for (int k = 0; k < 4; ++k) split(a[k], ah[k], al[k]);
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        unsigned bh[2], bl[2];
        split(__uint_as_float(r0[j]), bh[0], bl[0]);
        split(__uint_as_float(r1[j]), bh[1], bl[1]);
        mma3(h[j], ah, al, bh, bl);
      }
    }
  }
  __device__ static HSq squared(const float (&h)[NT][4]) {
    HSq s;
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const float a[4] = {h[j][0] * h[j][0], h[j][2] * h[j][2], h[j][1] * h[j][1],
                          h[j][3] * h[j][3]};
#pragma unroll
      for (int k = 0; k < 4; ++k) s.a[j][k] = a[k];
    }
    return s;
  }
  // g for the group: tile e's output column n = q is W's row `w_row(e)`; its B fragment for
  // k8-chunk j is W[row][NT 2 t + j] and W[row][NT (2 t + 1) + j].
  template <class WRow>
  __device__ static void gamma(float (&g)[2][E], const HSq& s, const WRow& w_row) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      unsigned w[2 * NT];
      load_words<2 * NT * 4>(w, w_row(e));
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        unsigned bh[2], bl[2];
        split(__uint_as_float(w[j]), bh[0], bl[0]);
        split(__uint_as_float(w[NT + j]), bh[1], bl[1]);
        unsigned ah[4], al[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) split(s.a[j][k], ah[k], al[k]);
        mma3(acc, ah, al, bh, bl);
      }
      g[0][2 * e] = acc[0], g[0][2 * e + 1] = acc[1];
      g[1][2 * e] = acc[2], g[1][2 * e + 1] = acc[3];
    }
  }
};

template <class T, class MT, int R>
struct Products16 {  // f16 and bf16; MT kiln's type for the MMA
  static constexpr int E = 8, NT = R / 8;
  static_assert(NT % 2 == 0, "R a multiple of 16 for 2-byte types");
  using V = Vec<T>;
  struct HSq {  // k16-chunk j = h's tiles 2 j and 2 j + 1
    unsigned hi[NT / 2][4], lo[NT / 2][4];
  };
  __device__ static void split2(float x, float y, unsigned& hi, unsigned& lo) {
    hi = V::of2(x, y);
    const float2 b = V::to2(hi);
    lo = V::of2(x - b.x, y - b.y);
  }
  __device__ static unsigned lows(unsigned a, unsigned b) { return __byte_perm(a, b, 0x5410); }
  __device__ static unsigned highs(unsigned a, unsigned b) { return __byte_perm(a, b, 0x7632); }
  // h += v U: k16-chunk c is elements 4 c to 4 c + 3 (tiles 2 c and 2 c + 1). kExactA: v is
  // already in T (the first Gamma of a step), one product.
  template <bool kExactA>
  __device__ static void hidden(float (&h)[NT][4], const float (&v)[2][E], const T* u) {
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      unsigned r[4][NT / 2];  // U's rows of elements 4 c to 4 c + 3
#pragma unroll
      for (int k = 0; k < 4; ++k) load_words<NT * 2>(r[k], u + (4 * c + k) * R);
      unsigned ah[4], al[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {  // a0 row q, a1 row q + 8; a2, a3 the chunk's upper half
        const int row = k % 2, i = 4 * c + 2 * (k / 2);
        split2(v[row][i], v[row][i + 1], ah[k], al[k]);
      }
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const unsigned b[2] = {
            j % 2 ? highs(r[0][j / 2], r[1][j / 2]) : lows(r[0][j / 2], r[1][j / 2]),
            j % 2 ? highs(r[2][j / 2], r[3][j / 2]) : lows(r[2][j / 2], r[3][j / 2])};
        if (!kExactA) mma_16816<MT>(h[j], al, b);
        mma_16816<MT>(h[j], ah, b);
      }
    }
  }
  __device__ static HSq squared(const float (&h)[NT][4]) {
    HSq s;
#pragma unroll
    for (int j = 0; j < NT / 2; ++j)
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float* a = h[2 * j + k / 2];
        const int row = k % 2;
        split2(a[2 * row] * a[2 * row], a[2 * row + 1] * a[2 * row + 1], s.hi[j][k], s.lo[j][k]);
      }
    return s;
  }
  // g for the group: tile e's W row holds, from column NT 2 t, k16-chunk j's B fragment as
  // {W[2 j], W[NT + 2 j]} and {W[2 j + 1], W[NT + 2 j + 1]}.
  template <class WRow>
  __device__ static void gamma(float (&g)[2][E], const HSq& s, const WRow& w_row) {
#pragma unroll
    for (int e = 0; e < E / 2; ++e) {
      unsigned w[NT];
      load_words<2 * NT * 2>(w, w_row(e));
      float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int j = 0; j < NT / 2; ++j) {
        const unsigned b[2] = {lows(w[j], w[NT / 2 + j]), highs(w[j], w[NT / 2 + j])};
        mma_16816<MT>(acc, s.lo[j], b);
        mma_16816<MT>(acc, s.hi[j], b);
      }
      g[0][2 * e] = acc[0], g[0][2 * e + 1] = acc[1];
      g[1][2 * e] = acc[2], g[1][2 * e + 1] = acc[3];
    }
  }
};
template <int R>
struct Products<__nv_bfloat16, R> : Products16<__nv_bfloat16, kiln::bf16, R> {};
template <int R>
struct Products<__half, R> : Products16<__half, kiln::half, R> {};

// A thread's groups of the state ([2][E] floats each) parked in shared memory, float4 by float4
// in lane order: p is the thread's first; the warp's next float4s are 32 further on.
template <int E>
struct Stash {
  float4* p;
  __device__ void put(int k, const float (&y)[2][E]) const {
#pragma unroll
    for (int c = 0; c < E / 2; ++c) {
      const float* a = &y[c / (E / 4)][4 * (c % (E / 4))];
      p[(k * E / 2 + c) * 32] = make_float4(a[0], a[1], a[2], a[3]);
    }
  }
  __device__ void get(int k, float (&y)[2][E]) const {
#pragma unroll
    for (int c = 0; c < E / 2; ++c) {
      const float4 a = p[(k * E / 2 + c) * 32];
      float* o = &y[c / (E / 4)][4 * (c % (E / 4))];
      o[0] = a.x, o[1] = a.y, o[2] = a.z, o[3] = a.w;
    }
  }
};

// Sums each warp's h over the block's warps, in warp order (every warp gets the same bits).
template <int WD, int NT>
__device__ inline void sum_warps(float (&h)[NT][4], float4 (*red)[32][NT], int warp, int lane) {
#pragma unroll
  for (int j = 0; j < NT; ++j) red[warp][lane][j] = make_float4(h[j][0], h[j][1], h[j][2], h[j][3]);
  __syncthreads();
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    float4 a = red[0][lane][j];
#pragma unroll
    for (int w = 1; w < WD; ++w) {
      const float4 b = red[w][lane][j];
      a = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
    }
    h[j][0] = a.x, h[j][1] = a.y, h[j][2] = a.z, h[j][3] = a.w;
  }
}

}  // namespace gfn::mma
