#pragma once
/// \file
/// Op functions. Each specializes its kernel for the operands it meets, compiles it on first
/// use (or finds it in the cache) and launches it on the engine's stream.

#include <kiln/attrs.hpp>
#include <kiln/engine.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

/// Runs op `name` (docs/ops.md) and returns a new contiguous tensor.
Tensor call(Engine& engine, std::string_view name, const std::vector<Operand>& args,
            const Attrs& attrs = {});
/// Runs op `name` writing into `out`, whose shape and dtype must be the result's.
void call_into(Engine& engine, std::string_view name, const TensorView& out,
               const std::vector<Operand>& args, const Attrs& attrs = {});
/// Specializes and compiles the kernel `call` would launch, without launching it. Works on an
/// offline engine; views may have data == 0 (then they count as 256-byte aligned).
KernelRecord precompile(Engine& engine, std::string_view name, const std::vector<Operand>& args,
                        const Attrs& attrs = {});

/// The names of kiln's ops (docs/ops.md), in catalog order.
std::vector<std::string> op_names();

/// The result shape and dtype of an op, without an engine (NumPy broadcasting, promotion).
TensorView infer(std::string_view name, const std::vector<Operand>& args, const Attrs& attrs = {});

// Named shorthands for call().
#define KILN_UNARY_OP(op) \
  inline Tensor op(Engine& e, const Operand& x) { return call(e, #op, {x}); }
#define KILN_BINARY_OP(op) \
  inline Tensor op(Engine& e, const Operand& a, const Operand& b) { return call(e, #op, {a, b}); }
KILN_UNARY_OP(neg)
// clang-format off
KILN_UNARY_OP(abs)
KILN_UNARY_OP(exp)
KILN_UNARY_OP(log)
KILN_UNARY_OP(sqrt)
KILN_UNARY_OP(rsqrt)
KILN_UNARY_OP(sin)
KILN_UNARY_OP(cos)
KILN_UNARY_OP(tanh)
KILN_UNARY_OP(sigmoid)
KILN_UNARY_OP(relu)
KILN_UNARY_OP(gelu)
KILN_UNARY_OP(gelu_tanh)
KILN_UNARY_OP(silu)
KILN_UNARY_OP(softplus)
KILN_BINARY_OP(add)
KILN_BINARY_OP(sub)
KILN_BINARY_OP(mul)
KILN_BINARY_OP(div)
KILN_BINARY_OP(pow)
KILN_BINARY_OP(maximum)
KILN_BINARY_OP(minimum)
KILN_BINARY_OP(eq)
KILN_BINARY_OP(ne)
KILN_BINARY_OP(lt)
KILN_BINARY_OP(le)
KILN_BINARY_OP(gt)
KILN_BINARY_OP(ge)
// clang-format on
#undef KILN_UNARY_OP
#undef KILN_BINARY_OP

inline Tensor where(Engine& e, const Operand& cond, const Operand& a, const Operand& b) {
  return call(e, "where", {cond, a, b});
}
inline Tensor clamp(Engine& e, const Operand& x, std::optional<double> min,
                    std::optional<double> max) {
  Attrs a;
  if (min) a.set("min", *min);
  if (max) a.set("max", *max);
  return call(e, "clamp", {x}, a);
}
inline Tensor cast(Engine& e, const Operand& x, DType to) {
  return call(e, "cast", {x}, Attrs().set("dtype", to));
}
/// x[..., start:stop, ...] along `axis`, as a new contiguous tensor.
inline Tensor slice(Engine& e, const Operand& x, std::int64_t axis, std::int64_t start,
                    std::int64_t stop) {
  return call(e, "slice", {x}, Attrs().set("axis", axis).set("start", start).set("stop", stop));
}

}  // namespace kiln
