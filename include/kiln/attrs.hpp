#pragma once
/// \file
/// An op's operands and attributes: what every op call takes. kiln::Attrs is implemented in
/// ops/ (ops/attr_map.cpp), below the engine: the op catalog reads attributes through it.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <kiln/dtype.hpp>
#include <kiln/tensor.hpp>
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

}  // namespace kiln
