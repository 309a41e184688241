#pragma once
/// \file
/// Op functions. Each specializes its kernel for the operands it meets, compiles it on first
/// use (or finds it in the cache) and launches it on the engine's stream.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <kiln/engine.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kiln {

/// A tensor operand or a scalar (a scalar never changes the result dtype).
using Operand = std::variant<TensorView, double>;

/// One attribute's value as graph JSON and Python hold it: a dtype and "all" are strings.
using AttrValue = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>>;

/// An op call's attributes by name, each op's own (docs/ops.md; the schema an op declares in
/// ops/, kiln/op_schema.hpp): a new op's attribute is a new name, no new field. The engine's
/// entry points check names and values against the op's schema (ArgumentError naming the op,
/// the attribute and what it takes), so a reader's getter meets a value of its type.
class Attrs {
 public:
  /// Name order, with lookups by string_view.
  using Map = std::map<std::string, AttrValue, std::less<>>;

  Attrs() = default;
  /// `Attrs{{"axis", std::int64_t(1)}, {"keepdim", true}}`; a later duplicate name wins.
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> values);

  /// Sets attribute `name` to `v`, replacing any value; returns *this to chain calls.
  Attrs& set(std::string_view name, AttrValue v);
  Attrs& set(std::string_view name, bool v) { return set(name, AttrValue(v)); }
  Attrs& set(std::string_view name, int v) { return set(name, AttrValue(std::int64_t(v))); }
  Attrs& set(std::string_view name, long v) { return set(name, AttrValue(std::int64_t(v))); }
  Attrs& set(std::string_view name, long long v) { return set(name, AttrValue(std::int64_t(v))); }
  Attrs& set(std::string_view name, double v) { return set(name, AttrValue(v)); }
  /// Stored as the dtype's name ("f32"), as graph JSON writes it.
  Attrs& set(std::string_view name, DType v);
  /// A string (an overload of its own: a literal would otherwise convert to bool).
  Attrs& set(std::string_view name, const char* v) { return set(name, AttrValue(std::string(v))); }
  Attrs& set(std::string_view name, std::string v) { return set(name, AttrValue(std::move(v))); }
  Attrs& set(std::string_view name, std::vector<std::int64_t> v) {
    return set(name, AttrValue(std::move(v)));
  }
  /// `set("shape", {4, -1})`: a braced list is a list of integers.
  Attrs& set(std::string_view name, std::initializer_list<std::int64_t> v) {
    return set(name, std::vector<std::int64_t>(v));
  }
  /// Removes attribute `name` (nothing when it is not set); returns *this.
  Attrs& erase(std::string_view name);

  /// Whether attribute `name` is set.
  bool has(std::string_view name) const { return find(name) != nullptr; }
  /// The value of attribute `name`, or null when it is not set.
  const AttrValue* find(std::string_view name) const;
  /// Every attribute set, in name order.
  const Map& values() const { return values_; }
  /// True when no attribute is set.
  bool empty() const { return values_.empty(); }
  friend bool operator==(const Attrs& a, const Attrs& b) { return a.values_ == b.values_; }
  friend bool operator!=(const Attrs& a, const Attrs& b) { return !(a == b); }

  // The typed getters: nullopt for an attribute not set; ArgumentError naming the attribute,
  // its value and what the getter takes for a value of another type.

  /// A float; an integer is converted.
  std::optional<double> number(std::string_view name) const;
  /// An integer (7.5 is refused, not truncated).
  std::optional<std::int64_t> integer(std::string_view name) const;
  /// A dtype, from its name (DtypeError for a name kiln does not know).
  std::optional<DType> dtype(std::string_view name) const;
  /// A list of integers.
  std::optional<std::vector<std::int64_t>> extents(std::string_view name) const;
  /// A string.
  std::optional<std::string> text(std::string_view name) const;
  /// A flag: false when not set.
  bool flag(std::string_view name) const;

 private:
  Map values_;
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
