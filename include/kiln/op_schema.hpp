#pragma once
/// \file
/// What an op declares of itself: its operands (optional ones last), its attribute schema and a
/// paragraph of doc. Graph JSON, Python and the eager call signature read and write attributes
/// through the schema, so an op's new attribute is one entry of its schema (ops/ registers them).

#include <kiln/attrs.hpp>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kiln {

class Graph;

/// What an attribute's values are.
enum class AttrType {
  number,   ///< a float (an integer is taken too)
  integer,  ///< an integer
  flag,     ///< true or false
  dtype,    ///< a dtype's name (f32, f16, bf16, bool)
  extents,  ///< a list of integers
  axis,     ///< an integer, or "all" (every axis)
  choice,   ///< one of the words AttrSpec::choices lists ("top_left", "bottom_right")
};

/// The values a number or integer attribute takes: [lo, hi], lo excluded when `lo_open`.
struct AttrRange {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
};

/// "> 0", ">= 1 and <= 8"; empty for a range that bounds nothing.
std::string range_text(const AttrRange& range);

/// One attribute of an op.
struct AttrSpec {
  std::string_view name;  ///< also its key in Attrs
  AttrType type = AttrType::number;
  /// The value an absent attribute stands for; none where absent means "unset" (clamp's bounds)
  /// or the attribute is `required`.
  std::optional<AttrValue> fallback;
  bool required = false;
  AttrRange range;
  std::string_view doc;  ///< one line
  std::vector<std::string_view> choices = {};  ///< a choice's words
};

/// An op's declaration, as views into its definition (a graph's own op: valid while the graph
/// is).
struct OpSchema {
  std::string_view name;
  std::vector<std::string_view> operands;  ///< in order; those from `required_operands` on are optional
  std::size_t required_operands = 0;
  bool variadic = false;  ///< the last operand repeats (concat's xs): any number of them
  std::vector<AttrSpec> attrs;
  std::string_view doc;     ///< one paragraph
  std::string_view dtypes;  ///< the dtype rule, in a sentence or two
};

/// The schema of op `op`: `graph`'s own ops first when one is given, then kiln's catalog.
/// ArgumentError naming the known ops otherwise.
OpSchema op_schema(std::string_view op, const Graph* graph = nullptr);

/// The attribute `key` of `schema`, or null.
const AttrSpec* find_attr(const OpSchema& schema, std::string_view key);

/// Why `key` is no attribute of `schema`, with a hint for a near miss: "sum has no attribute
/// 'dim': kiln calls it axis; its attributes: axis, keepdim" (torch's and numpy's names), "did
/// you mean eps?" (a typo), the op's attributes listed.
std::string unknown_attr(const OpSchema& schema, std::string_view key);

/// "a number", "an integer", "true or false" (Python: "True or False"), ...: what `type` takes.
std::string_view type_text(AttrType type, bool python = false);

/// `v` as graph JSON writes it: 1e-05, -1, true, "all", [4, -1].
std::string value_text(const AttrValue& v);

/// Sets attribute `spec` of `attrs` to `v`, a value of spec.type's alternative (an integer for
/// a number is taken, and stored as a float). ArgumentError saying what the attribute takes for
/// a value of another alternative or outside its range, DtypeError for an unknown dtype name.
void set_attr(Attrs& attrs, const AttrSpec& spec, const AttrValue& v);

/// The attributes `attrs` sets, by name, in name order: what graph JSON writes and the eager
/// signature keys on. A false flag is left out: false is every flag's default, so
/// {keepdim: false} is the same call as {}, and graph JSON has never written one.
std::vector<std::pair<std::string_view, AttrValue>> attr_values(const Attrs& attrs);

}  // namespace kiln
