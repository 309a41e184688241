#pragma once
/// \file
/// Op functions. Each specializes its kernel for the operands it meets, compiles it on first
/// use (or finds it in the cache) and launches it on the engine's stream.

#include <kiln/engine.hpp>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

namespace kiln {

/// A tensor operand or a scalar (a scalar never changes the result dtype).
using Operand = std::variant<TensorView, double>;

/// Op attributes: `min`/`max` for clamp, `dtype` for cast, `axis`/`keepdim` for reductions
/// and softmax, `eps` for norms, `tf32` for matrix products, `shape` for reshape, `axis`,
/// `start` and `stop` for slice.
struct Attrs {
  std::optional<double> min;
  std::optional<double> max;
  std::optional<DType> dtype;
  std::optional<std::int64_t> axis;  ///< default -1, the last axis (norms: the last axis only)
  bool all_axes = false;             ///< reductions over every element (JSON: "axis": "all")
  bool keepdim = false;
  std::optional<double> eps;  ///< default 1e-5
  /// matmul/linear of f32 operands on TF32 tensor cores (about 1e-3 relative) rather than to
  /// within 1e-5 of the exact product (three TF32 products per term).
  bool tf32 = false;
  /// reshape's result shape (one extent may be -1: what the element count leaves).
  std::optional<std::vector<std::int64_t>> shape;
  /// slice's range along `axis`: [start, stop), as Python indexes (a negative one counts from
  /// the end), each within the axis.
  std::optional<std::int64_t> start;
  std::optional<std::int64_t> stop;
};

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
  a.min = min;
  a.max = max;
  return call(e, "clamp", {x}, a);
}
inline Tensor cast(Engine& e, const Operand& x, DType to) {
  Attrs a;
  a.dtype = to;
  return call(e, "cast", {x}, a);
}
/// x[..., start:stop, ...] along `axis`, as a new contiguous tensor.
inline Tensor slice(Engine& e, const Operand& x, std::int64_t axis, std::int64_t start,
                    std::int64_t stop) {
  Attrs a;
  a.axis = axis;
  a.start = start;
  a.stop = stop;
  return call(e, "slice", {x}, a);
}

}  // namespace kiln
