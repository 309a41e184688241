// Tuning probe for the elementwise template: times block x unroll (and, for silu, alternative
// formulations) per op and dtype on the GPU, each output compared with the default's.
// Notes on what it found: bench/NOTES.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <kiln/kiln.hpp>
#include <random>

#include "bench/common.hpp"
#include "engine/engine_impl.hpp"
#include "engine/op_call.hpp"
#include "ops/op.hpp"

namespace {

// Alternative silu formulations, compiled as extra source in front of the template.
const char* kVariants = R"(
struct SiluRcp { static constexpr int arity = 1;
  __device__ __forceinline__ static float apply(float x) { return x * __frcp_rn(1.0f + expf(-x)); } };
struct SiluFast { static constexpr int arity = 1;
  __device__ __forceinline__ static float apply(float x) { return __fdividef(x, 1.0f + __expf(-x)); } };
)";

}  // namespace

int run() {
  kiln::Engine e;
  const std::int64_t n = 64ll << 20;
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> d(-4, 4);
  for (kiln::DType t : {kiln::DType::bf16, kiln::DType::f32}) {
    std::vector<unsigned char> h(std::size_t(n) * kiln::size_of(t)),
        hb(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
      kiln::store_element(t, d(rng), h.data() + i * kiln::size_of(t));
    for (auto& c : hb) c = rng() & 1;
    kiln::Tensor a = e.from_host({n}, t, h.data()), b = e.from_host({n}, t, h.data()),
                 k = e.from_host({n}, kiln::DType::boolean, hb.data()), out = e.empty({n}, t);
    for (const char* name : {"silu", "add", "where"}) {
      const auto& op = kiln::ops::find_op(name);
      std::vector<kiln::Operand> args = op.operands.size() == 1 ? std::vector<kiln::Operand>{a}
                                        : op.operands.size() == 2
                                            ? std::vector<kiln::Operand>{a, b}
                                            : std::vector<kiln::Operand>{k, a, b};
      std::vector<std::string> functors = {std::string(op.functor)};
      if (std::string(name) == "silu") functors = {"kiln::op::Silu", "SiluRcp", "SiluFast"};
      kiln::call_into(e, name, out, args);
      const auto reference = kiln::bench::fetch(out);
      for (const auto& functor : functors)
        for (int block : {128, 256, 512})
          for (int unroll : {1, 2, 4, 8}) {
            kiln::KernelLaunch L = kiln::specialize_call(kiln::op_call(op, out, args, {}), e.arch(),
                                                         {{"block", block}, {"unroll", unroll}});
            if (functor != op.functor) {
              const std::size_t at = L.spec.source.find(op.functor);
              L.spec.source.replace(at, op.functor.size(), functor);
              L.spec.source = kVariants + L.spec.source;
              L.spec.name += "_" + functor;
            }
            out.fill_bytes(0xff);
            const double ms =
                e.time_median_ms([&] { kiln::detail::impl_of(e).launch_kernel(L); }, 3, 20);
            std::size_t bytes =
                out.bytes() * (1 + (op.operands.size() == 3 ? 2 : op.operands.size())) +
                (op.operands.size() == 3 ? std::size_t(n) : 0);
            fmt::print(
                "{:<6} {:<5} {:<16} block {:>3} unroll {}  {:8.1f} us  {:6.0f} GB/s  diff {:.1e}\n",
                name, kiln::name_of(t), functor, block, unroll, ms * 1e3, bytes / ms / 1e6,
                kiln::bench::max_diff(reference, kiln::bench::fetch(out), t));
          }
    }
  }
  return 0;
}

int main(int, char** argv) {
  return kiln::bench::guarded(argv[0], [&] { return run(); });
}
