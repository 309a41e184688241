#pragma once
// Warpgroup matrix multiply-add (wgmma, sm_90a): shared-memory matrix descriptors and
// D (64 x N, f32) += A (64 x 16, K-major) * B (16 x N, K- or N-major) for f16 and bf16, or
// A (64 x 8) * B (8 x N), both K-major, for f32 on TF32 (32 bytes of K either way), with both
// operands in shared memory, 128-byte swizzled as TMA writes them (or A in registers: WgmmaRs,
// WgmmaTf32Rs). Issued by a whole
// warpgroup (128 threads); asynchronous between fence and wait. Accumulator fragments are
// mma.sync's m16n8 ones, warp w of the group holding rows 16w..16w+15.

#include <kiln/dtype.cuh>

namespace kiln::wgmma {

/// The descriptor of a 128-byte swizzled operand tile at `tile` (shared memory, 1024-byte
/// aligned atoms): `leading` and `stride` byte offsets as PTX defines them (K-major: leading
/// unused, stride between groups of 8 rows; MN-major: leading between 64-element atoms along
/// M or N, stride between groups of 8 rows along K).
__device__ __forceinline__ unsigned long long descriptor(const void* tile, unsigned leading,
                                                         unsigned stride) {
  const unsigned long long address = static_cast<unsigned>(__cvta_generic_to_shared(tile));
  return ((address & 0x3FFFF) >> 4) | (static_cast<unsigned long long>(leading >> 4) << 16) |
         (static_cast<unsigned long long>(stride >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
/// Waits until at most `Pending` committed groups are in flight.
template <int Pending>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(Pending) : "memory");
}
template <class T, int N>
struct Wgmma;

#define KILN_WGMMA_D8(i)                                                                      \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
#define KILN_WGMMA_D32(i) \
  KILN_WGMMA_D8(i), KILN_WGMMA_D8(i + 8), KILN_WGMMA_D8(i + 16), KILN_WGMMA_D8(i + 24)
#define KILN_WGMMA_D64(i) KILN_WGMMA_D32(i), KILN_WGMMA_D32(i + 32)
#define KILN_WGMMA_D40(i) KILN_WGMMA_D32(i), KILN_WGMMA_D8(i + 32)
#define KILN_WGMMA_D48(i) KILN_WGMMA_D32(i), KILN_WGMMA_D8(i + 32), KILN_WGMMA_D8(i + 40)
#define KILN_WGMMA_D80(i) KILN_WGMMA_D64(i), KILN_WGMMA_D8(i + 64), KILN_WGMMA_D8(i + 72)
#define KILN_WGMMA_D96(i) KILN_WGMMA_D64(i), KILN_WGMMA_D32(i + 64)

// The accumulators' operand lists of m64n64 (32 floats), m64n80 (40), m64n96 (48), m64n128
// (64), m64n160 (80), m64n192 (96) and m64n256 (128).
#define KILN_WGMMA_R40 \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24," \
  "%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39"
#define KILN_WGMMA_R48 \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24," \
  "%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47"
#define KILN_WGMMA_R80 \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24," \
  "%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47," \
  "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70," \
  "%71,%72,%73,%74,%75,%76,%77,%78,%79"
#define KILN_WGMMA_R96 \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24," \
  "%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47," \
  "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70," \
  "%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93," \
  "%94,%95"
#define KILN_WGMMA_R32                                                                             \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25," \
  "%26,%27,%28,%29,%30,%31"
#define KILN_WGMMA_R64                                                                             \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25," \
  "%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%"  \
  "49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
#define KILN_WGMMA_R128                                                                            \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25," \
  "%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%"  \
  "49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%"   \
  "72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%"   \
  "95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114," \
  "%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"

// Wgmma<T, N>: REGS the accumulators' operands, A B SCALE TRANS the other operands' numbers.
#define KILN_WGMMA(T, PTX, N, R, REGS, A, B, SCALE, TRANS, ...)                                    \
  template <>                                                                                      \
  struct Wgmma<T, N> {                                                                             \
    template <int TransB>                                                                          \
    __device__ __forceinline__ static void run(float (&d)[R], unsigned long long a,                \
                                               unsigned long long b, int accumulate) {             \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE                                       \
                   ", 0;\n"                                                                        \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX "." PTX " {" REGS "}, " A \
                   ", " B ", p, 1, 1, 0, " TRANS ";\n}\n"                                          \
                   : __VA_ARGS__                                                                   \
                   : "l"(a), "l"(b), "r"(accumulate), "n"(TransB));                                \
    }                                                                                              \
  };

KILN_WGMMA(half, "f16", 64, 32, KILN_WGMMA_R32, "%32", "%33", "%34", "%35", KILN_WGMMA_D32(0))
KILN_WGMMA(bf16, "bf16", 64, 32, KILN_WGMMA_R32, "%32", "%33", "%34", "%35", KILN_WGMMA_D32(0))
KILN_WGMMA(half, "f16", 128, 64, KILN_WGMMA_R64, "%64", "%65", "%66", "%67", KILN_WGMMA_D64(0))
KILN_WGMMA(bf16, "bf16", 128, 64, KILN_WGMMA_R64, "%64", "%65", "%66", "%67", KILN_WGMMA_D64(0))
KILN_WGMMA(half, "f16", 80, 40, KILN_WGMMA_R40, "%40", "%41", "%42", "%43", KILN_WGMMA_D40(0))
KILN_WGMMA(bf16, "bf16", 80, 40, KILN_WGMMA_R40, "%40", "%41", "%42", "%43", KILN_WGMMA_D40(0))
KILN_WGMMA(half, "f16", 96, 48, KILN_WGMMA_R48, "%48", "%49", "%50", "%51", KILN_WGMMA_D48(0))
KILN_WGMMA(bf16, "bf16", 96, 48, KILN_WGMMA_R48, "%48", "%49", "%50", "%51", KILN_WGMMA_D48(0))
KILN_WGMMA(half, "f16", 160, 80, KILN_WGMMA_R80, "%80", "%81", "%82", "%83", KILN_WGMMA_D80(0))
KILN_WGMMA(bf16, "bf16", 160, 80, KILN_WGMMA_R80, "%80", "%81", "%82", "%83", KILN_WGMMA_D80(0))
KILN_WGMMA(half, "f16", 192, 96, KILN_WGMMA_R96, "%96", "%97", "%98", "%99", KILN_WGMMA_D96(0))
KILN_WGMMA(bf16, "bf16", 192, 96, KILN_WGMMA_R96, "%96", "%97", "%98", "%99", KILN_WGMMA_D96(0))
KILN_WGMMA(half, "f16", 256, 128, KILN_WGMMA_R128, "%128", "%129", "%130", "%131",
           KILN_WGMMA_D64(0), KILN_WGMMA_D64(64))
KILN_WGMMA(bf16, "bf16", 256, 128, KILN_WGMMA_R128, "%128", "%129", "%130", "%131",
           KILN_WGMMA_D64(0), KILN_WGMMA_D64(64))

// f32 operands on TF32 (m64nNk8): K-major only, so no transpose operands.
#define KILN_WGMMA_TF32(N, R, REGS, A, B, SCALE, ...)                                              \
  template <>                                                                                      \
  struct Wgmma<float, N> {                                                                         \
    template <int TransB>                                                                          \
    __device__ __forceinline__ static void run(float (&d)[R], unsigned long long a,                \
                                               unsigned long long b, int accumulate) {             \
      static_assert(TransB == 0, "TF32 operands are K-major");                                     \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE                                       \
                   ", 0;\n"                                                                        \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 {" REGS "}, " A ", " B \
                   ", p, 1, 1;\n}\n"                                                               \
                   : __VA_ARGS__                                                                   \
                   : "l"(a), "l"(b), "r"(accumulate));                                             \
    }                                                                                              \
  };

KILN_WGMMA_TF32(64, 32, KILN_WGMMA_R32, "%32", "%33", "%34", KILN_WGMMA_D32(0))
KILN_WGMMA_TF32(128, 64, KILN_WGMMA_R64, "%64", "%65", "%66", KILN_WGMMA_D64(0))
KILN_WGMMA_TF32(80, 40, KILN_WGMMA_R40, "%40", "%41", "%42", KILN_WGMMA_D40(0))
KILN_WGMMA_TF32(96, 48, KILN_WGMMA_R48, "%48", "%49", "%50", KILN_WGMMA_D48(0))
KILN_WGMMA_TF32(160, 80, KILN_WGMMA_R80, "%80", "%81", "%82", KILN_WGMMA_D80(0))
KILN_WGMMA_TF32(192, 96, KILN_WGMMA_R96, "%96", "%97", "%98", KILN_WGMMA_D96(0))
KILN_WGMMA_TF32(256, 128, KILN_WGMMA_R128, "%128", "%129", "%130", KILN_WGMMA_D64(0),
                KILN_WGMMA_D64(64))

/// D (64 x N) += A (64 x 8, TF32 words in registers: this thread's rows g and g + 8 of its
/// warp's 16, columns t and t + 4, as mma.sync's m16n8k8) * B (8 x N, K-major in shared memory).
/// The registers must hold still until a wait_group covers the product.
template <int N>
struct WgmmaTf32Rs;

#define KILN_WGMMA_TF32_RS(N, R, REGS, A0, B, SCALE, ...)                                    \
  template <>                                                                                \
  struct WgmmaTf32Rs<N> {                                                                    \
    __device__ __forceinline__ static void run(float (&d)[R], const unsigned (&a)[4],        \
                                               unsigned long long b, int accumulate) {       \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE                                 \
                   ", 0;\n"                                                                  \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 {" REGS "}, " A0 \
                   ", " B ", p, 1, 1;\n}\n"                                                  \
                   : __VA_ARGS__                                                             \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));   \
    }                                                                                        \
  };

KILN_WGMMA_TF32_RS(64, 32, KILN_WGMMA_R32, "{%32, %33, %34, %35}", "%36", "%37", KILN_WGMMA_D32(0))
KILN_WGMMA_TF32_RS(128, 64, KILN_WGMMA_R64, "{%64, %65, %66, %67}", "%68", "%69", KILN_WGMMA_D64(0))

/// D (64 x N, f32) += A (64 x 16 of f16 or bf16 in registers: mma.sync's m16n8k16 A fragment of
/// this thread's warp's 16 rows, pairs packed low element first) * B (16 x N in shared memory,
/// K- or N-major). The registers must hold still until a wait_group covers the product.
template <class T, int N>
struct WgmmaRs;

#define KILN_WGMMA_RS(T, PTX, N, R, REGS, A0, B, SCALE, TRANS, ...)                           \
  template <>                                                                                \
  struct WgmmaRs<T, N> {                                                                     \
    template <int TransB>                                                                    \
    __device__ __forceinline__ static void run(float (&d)[R], const unsigned (&a)[4],        \
                                               unsigned long long b, int accumulate) {       \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE                                 \
                   ", 0;\n"                                                                  \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX "." PTX " {" REGS   \
                   "}, " A0 ", " B ", p, 1, 1, " TRANS ";\n}\n"                              \
                   : __VA_ARGS__                                                             \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate),   \
                     "n"(TransB));                                                           \
    }                                                                                        \
  };

KILN_WGMMA_RS(half, "f16", 64, 32, KILN_WGMMA_R32, "{%32, %33, %34, %35}", "%36", "%37", "%38",
              KILN_WGMMA_D32(0))
KILN_WGMMA_RS(bf16, "bf16", 64, 32, KILN_WGMMA_R32, "{%32, %33, %34, %35}", "%36", "%37", "%38",
              KILN_WGMMA_D32(0))
KILN_WGMMA_RS(half, "f16", 128, 64, KILN_WGMMA_R64, "{%64, %65, %66, %67}", "%68", "%69", "%70",
              KILN_WGMMA_D64(0))
KILN_WGMMA_RS(bf16, "bf16", 128, 64, KILN_WGMMA_R64, "{%64, %65, %66, %67}", "%68", "%69", "%70",
              KILN_WGMMA_D64(0))
KILN_WGMMA_RS(half, "f16", 192, 96, KILN_WGMMA_R96, "{%96, %97, %98, %99}", "%100", "%101",
              "%102", KILN_WGMMA_D96(0))
KILN_WGMMA_RS(bf16, "bf16", 192, 96, KILN_WGMMA_R96, "{%96, %97, %98, %99}", "%100", "%101",
              "%102", KILN_WGMMA_D96(0))
KILN_WGMMA_RS(half, "f16", 256, 128, KILN_WGMMA_R128, "{%128, %129, %130, %131}", "%132", "%133",
              "%134", KILN_WGMMA_D64(0), KILN_WGMMA_D64(64))
KILN_WGMMA_RS(bf16, "bf16", 256, 128, KILN_WGMMA_R128, "{%128, %129, %130, %131}", "%132", "%133",
              "%134", KILN_WGMMA_D64(0), KILN_WGMMA_D64(64))

/// Keeps `r` live, in its registers, up to this point (a product may still read them): a use,
/// not a definition, which would make ptxas serialize the products around it.
__device__ __forceinline__ void hold(const unsigned (&r)[4]) {
  asm volatile("" ::"r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
}

/// Marks accumulators `r` as written here. After a wait_group: the compiler does not move reads
/// of them above the wait, where the product may still be writing them; before a product is
/// issued: it does not sink other writes to them past the issue. Either would make ptxas
/// serialize the products (C7514, C7515).
template <int N>
__device__ __forceinline__ void fence_operands(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

/// The same for A fragments in registers: written before this point, so that the compiler
/// does not sink their writes past a product issued next (ptxas would serialize it).
template <int N>
__device__ __forceinline__ void fence_operands(unsigned (&r)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    asm volatile("" : "+r"(r[i][0]), "+r"(r[i][1]), "+r"(r[i][2]), "+r"(r[i][3])::"memory");
}

/// Sets this warpgroup's registers per thread to N (a multiple of 8 from 24 to 256): fewer for
/// a producer that only issues copies, more for consumers holding accumulators. Every warp of
/// the group calls it.
template <int N>
__device__ __forceinline__ void registers_down() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void registers_up() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}

#undef KILN_WGMMA_RS
#undef KILN_WGMMA_TF32_RS
#undef KILN_WGMMA_TF32
#undef KILN_WGMMA
#undef KILN_WGMMA_R128
#undef KILN_WGMMA_R96
#undef KILN_WGMMA_R80
#undef KILN_WGMMA_R48
#undef KILN_WGMMA_R40
#undef KILN_WGMMA_R64
#undef KILN_WGMMA_R32
#undef KILN_WGMMA_D96
#undef KILN_WGMMA_D80
#undef KILN_WGMMA_D48
#undef KILN_WGMMA_D40
#undef KILN_WGMMA_D64
#undef KILN_WGMMA_D32
#undef KILN_WGMMA_D8

}  // namespace kiln::wgmma
