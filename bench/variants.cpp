// Tuning probe for the elementwise template: times block x unroll (and, for silu, alternative
// formulations) per op, dtype and size on the GPU, each output compared with the default's.
// Notes on what it found: bench/NOTES.md.
// usage: kiln_bench_variants [SIZES [OPS]]   SIZES: elements, comma-separated (default 67108864);
//   OPS: unary or binary ops of the catalog and where, comma-separated (default silu,add,where).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <kiln/kiln.hpp>
#include <random>
#include <sstream>

#include "bench/common.hpp"
#include "engine/exec/engine_impl.hpp"
#include "engine/exec/op_call.hpp"
#include "ops/op.hpp"

namespace {

// Alternative silu formulations, compiled as extra source in front of the template.
const char* kVariants = R"(
struct SiluRcp { static constexpr int arity = 1;
  __device__ __forceinline__ static float apply(float x) { return x * __frcp_rn(1.0f + expf(-x)); } };
struct SiluFast { static constexpr int arity = 1;
  __device__ __forceinline__ static float apply(float x) { return __fdividef(x, 1.0f + __expf(-x)); } };
)";

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// n elements of t from `d`, as a tensor.
kiln::Tensor random_tensor(kiln::Engine& e, std::int64_t n, kiln::DType t, double lo, double hi,
                           std::mt19937_64& rng) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<unsigned char> h(std::size_t(n) * kiln::size_of(t));
  for (std::int64_t i = 0; i < n; ++i)
    kiln::store_element(t, t == kiln::DType::boolean ? double(rng() & 1) : d(rng),
                        h.data() + i * kiln::size_of(t));
  return e.from_host({n}, t, h.data());
}

// Every block x unroll (and silu formulation) of `name` over n elements of t.
void probe(kiln::Engine& e, const std::string& name, kiln::DType t, std::int64_t n,
           std::mt19937_64& rng) {
  const auto& op = kiln::ops::find_op(name);
  // A base in [0.25, 2] for the ops whose domain is positive (pow, log, div's divisor).
  const kiln::Tensor a = random_tensor(e, n, t, 0.25, 2, rng),
                     b = random_tensor(e, n, t, 0.25, 2, rng),
                     k = random_tensor(e, n, kiln::DType::boolean, 0, 1, rng);
  kiln::Tensor out = e.empty({n}, t);
  std::vector<kiln::Operand> args = op.operands.size() == 1   ? std::vector<kiln::Operand>{a}
                                    : op.operands.size() == 2 ? std::vector<kiln::Operand>{a, b}
                                                              : std::vector<kiln::Operand>{k, a, b};
  std::vector<std::string> functors = {std::string(op.functor)};
  if (name == "silu") functors = {"kiln::op::Silu", "SiluRcp", "SiluFast"};
  kiln::call_into(e, name, out, args);
  const auto reference = kiln::bench::fetch(out);
  const std::size_t bytes = out.bytes() * (1 + (op.operands.size() == 3 ? 2 : op.operands.size())) +
                            (op.operands.size() == 3 ? std::size_t(n) : 0);
  for (const auto& functor : functors)
    for (int block : {128, 256, 512})
      for (int unroll : {1, 2, 4, 8}) {
        kiln::KernelLaunch L =
            kiln::specialize_call(kiln::op_call(op, out, args, {}), kiln::target_of(e.arch()),
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
        fmt::print(
            "{:<6} {:<5} {:>9} {:<16} block {:>3} unroll {} grid {:>6} {:8.2f} us {:6.0f} GB/s "
            "diff {:.1e}\n",
            name, kiln::name_of(t), n, functor, block, unroll, L.config.grid[0], ms * 1e3,
            bytes / ms / 1e6, kiln::bench::max_diff(reference, kiln::bench::fetch(out), t));
      }
}

}  // namespace

int run(int argc, char** argv) {
  kiln::Engine e;
  std::vector<std::int64_t> sizes;
  for (const auto& s : split_list(argc > 1 ? argv[1] : "67108864")) {
    char* end = nullptr;
    const long long n = std::strtoll(s.c_str(), &end, 10);
    if (*end || n < 1) throw kiln::ArgumentError("a size is a positive element count: '" + s + "'");
    sizes.push_back(n);
  }
  const std::vector<std::string> ops = split_list(argc > 2 ? argv[2] : "silu,add,where");
  std::mt19937_64 rng(5);
  for (std::int64_t n : sizes)
    for (kiln::DType t : {kiln::DType::bf16, kiln::DType::f32})
      for (const auto& name : ops) probe(e, name, t, n, rng);
  return 0;
}

int main(int argc, char** argv) {
  return kiln::bench::guarded(argv[0], [&] { return run(argc, argv); });
}
