// Attributes through the schema: values checked against an op's AttrSpec (as graph JSON and
// Python set them, and as the engine's entry points check a C++ caller's), and the hints of an
// unknown key.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <kiln/error.hpp>
#include <kiln/op_schema.hpp>

#include "ops/op.hpp"

namespace kiln {
namespace {

bool holds(AttrType t, const AttrValue& v) {
  switch (t) {
    case AttrType::number:
      return std::holds_alternative<double>(v) || std::holds_alternative<std::int64_t>(v);
    case AttrType::integer:
      return std::holds_alternative<std::int64_t>(v);
    case AttrType::flag:
      return std::holds_alternative<bool>(v);
    case AttrType::dtype:
      return std::holds_alternative<std::string>(v);
    case AttrType::extents:
      return std::holds_alternative<std::vector<std::int64_t>>(v);
    case AttrType::choice:
      return std::holds_alternative<std::string>(v);
    case AttrType::axis:
      return std::holds_alternative<std::int64_t>(v) ||
             std::holds_alternative<std::vector<std::int64_t>>(v) ||
             (std::holds_alternative<std::string>(v) && std::get<std::string>(v) == "all");
  }
  return false;
}

// ArgumentError when `v` is not a value `spec` takes (its type, then its range), DtypeError
// for a dtype name kiln does not know.
void check_value(const AttrSpec& spec, const AttrValue& v) {
  if (!holds(spec.type, v))
    throw ArgumentError(
        fmt::format("attribute {}={} is not {}", spec.name, value_text(v), type_text(spec.type)));
  if (spec.type == AttrType::number || std::holds_alternative<std::int64_t>(v)) {
    const double x =
        std::holds_alternative<double>(v) ? std::get<double>(v) : double(std::get<std::int64_t>(v));
    const AttrRange& r = spec.range;
    if (x < r.lo || (r.lo_open && x == r.lo) || x > r.hi)
      throw ArgumentError(
          fmt::format("attribute {}={} is not {}", spec.name, value_text(v), range_text(r)));
  }
  if (spec.type == AttrType::dtype) parse_dtype(std::get<std::string>(v));
  if (spec.type == AttrType::choice &&
      std::find(spec.choices.begin(), spec.choices.end(), std::get<std::string>(v)) ==
          spec.choices.end())
    throw ArgumentError(fmt::format("attribute {}={} is not one of {}", spec.name, value_text(v),
                                    fmt::join(spec.choices, ", ")));
}

// Levenshtein distance, for "did you mean": attribute names are a few letters long.
std::size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The names torch, numpy and aten give kiln's attributes: a user of those types them first.
constexpr std::pair<std::string_view, std::string_view> kOtherNames[] = {
    {"dim", "axis"},         {"keepdims", "keepdim"}, {"end", "stop"},     {"begin", "start"},
    {"allow_tf32", "tf32"},  {"epsilon", "eps"},      {"a_min", "min"},    {"a_max", "max"},
    {"min_val", "min"},      {"max_val", "max"},      {"size", "shape"},   {"newshape", "shape"},
};

}  // namespace

std::string range_text(const AttrRange& r) {
  std::vector<std::string> parts;
  if (std::isfinite(r.lo)) parts.push_back(fmt::format("{} {}", r.lo_open ? ">" : ">=", r.lo));
  if (std::isfinite(r.hi)) parts.push_back(fmt::format("<= {}", r.hi));
  return fmt::format("{}", fmt::join(parts, " and "));
}

const AttrSpec* find_attr(const OpSchema& schema, std::string_view key) {
  for (const AttrSpec& a : schema.attrs)
    if (a.name == key) return &a;
  return nullptr;
}

std::string unknown_attr(const OpSchema& schema, std::string_view key) {
  std::vector<std::string_view> names;
  for (const AttrSpec& a : schema.attrs) names.push_back(a.name);
  const std::string op = printable_name(schema.name);
  if (names.empty())
    return fmt::format("{}: unknown attribute '{}'; {} takes no attributes", op,
                       printable_name(key), op);
  std::string hint;
  for (const auto& [other, ours] : kOtherNames)
    if (key == other && find_attr(schema, ours)) hint = fmt::format(": kiln calls it {}", ours);
  if (hint.empty()) {
    std::size_t best = key.size() <= 3 ? 2 : 3;  // a typo is this close; further, another word
    for (std::string_view n : names)
      if (const std::size_t d = distance(key, n); d < best) {
        best = d;
        hint = fmt::format(": did you mean {}?", n);
      }
  }
  return fmt::format("{}: unknown attribute '{}'{}; {}'s attributes are {}", op,
                     printable_name(key), hint, op, fmt::join(names, ", "));
}

std::string_view type_text(AttrType type, bool python) {
  switch (type) {
    case AttrType::number:
      return "a number";
    case AttrType::integer:
      return "an integer";
    case AttrType::flag:
      return python ? "True or False" : "true or false";
    case AttrType::dtype:
      return "a dtype (f32, f16, bf16, bool)";
    case AttrType::extents:
      return "a list of integers";
    case AttrType::axis:
      return "an integer, a list of adjacent ones or \"all\"";
    case AttrType::choice:
      return "a word (a string)";
  }
  return "?";
}

std::string value_text(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>)
          return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::string>)
          return fmt::format("\"{}\"", printable_name(x));
        else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>)
          return fmt::format("[{}]", fmt::join(x, ", "));
        else
          return fmt::format("{}", x);
      },
      v);
}

void set_attr(Attrs& attrs, const AttrSpec& spec, const AttrValue& v) {
  check_value(spec, v);
  // A number is stored as a float however it was written: graph JSON writes back what it read.
  if (spec.type == AttrType::number && std::holds_alternative<std::int64_t>(v))
    attrs.set(spec.name, double(std::get<std::int64_t>(v)));
  else
    attrs.set(spec.name, v);
}

std::vector<std::pair<std::string_view, AttrValue>> attr_values(const Attrs& attrs) {
  std::vector<std::pair<std::string_view, AttrValue>> out;
  for (const auto& [name, v] : attrs.values())
    if (!(std::holds_alternative<bool>(v) && !std::get<bool>(v))) out.emplace_back(name, v);
  return out;
}

namespace ops {

OpSchema schema_of(const OpDef& op) {
  OpSchema s;
  s.name = op.name;
  s.operands = op.operands;
  s.required_operands = op.min_operands ? op.min_operands : op.operands.size();
  s.variadic = op.variadic;
  s.attrs = op.attrs;
  s.doc = op.doc;
  s.dtypes = op.dtypes.empty() ? dtype_rule_doc(op.rule) : op.dtypes;
  return s;
}

void check_attrs(const OpDef& op, const Attrs& attrs) {
  for (const auto& [key, v] : attrs.values()) {
    const auto spec = std::find_if(op.attrs.begin(), op.attrs.end(),
                                   [&, &key = key](const AttrSpec& a) { return a.name == key; });
    if (spec == op.attrs.end()) throw ArgumentError(unknown_attr(schema_of(op), key));
    try {
      check_value(*spec, v);
    } catch (const ArgumentError& e) {
      throw ArgumentError(fmt::format("{}: {}", printable_name(op.name), e.what()));
    } catch (const DtypeError& e) {
      throw DtypeError(fmt::format("{}: {}", printable_name(op.name), e.what()));
    }
  }
}

}  // namespace ops
}  // namespace kiln
