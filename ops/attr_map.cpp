// kiln::Attrs, an op call's attributes by name: setting, erasing and the typed getters. What an
// op's schema allows is checked elsewhere (ops/attrs.cpp); a getter only refuses a value that
// is not of its type, so that an unchecked Attrs fails with a message, never a bad_variant_access.
#include <fmt/format.h>

#include <kiln/error.hpp>
#include <kiln/op_schema.hpp>

namespace kiln {
namespace {

// The value of `name` when it holds a T; null when it is not set; ArgumentError saying what the
// getter takes (`takes`) for a value of another type.
template <class T>
const T* value_as(const Attrs& attrs, std::string_view name, std::string_view takes) {
  const AttrValue* v = attrs.find(name);
  if (!v) return nullptr;
  if (const T* x = std::get_if<T>(v)) return x;
  throw ArgumentError(
      fmt::format("attribute {}={} is not {}", printable_name(name), value_text(*v), takes));
}

}  // namespace

Attrs::Attrs(std::initializer_list<std::pair<std::string, AttrValue>> values) {
  for (const auto& [name, v] : values) values_.insert_or_assign(name, v);
}

Attrs& Attrs::set(std::string_view name, AttrValue v) {
  values_.insert_or_assign(std::string(name), std::move(v));
  return *this;
}

Attrs& Attrs::set(std::string_view name, DType v) { return set(name, std::string(name_of(v))); }

Attrs& Attrs::erase(std::string_view name) {
  if (auto it = values_.find(name); it != values_.end()) values_.erase(it);
  return *this;
}

const AttrValue* Attrs::find(std::string_view name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

std::optional<double> Attrs::number(std::string_view name) const {
  if (const AttrValue* v = find(name); v && std::holds_alternative<std::int64_t>(*v))
    return double(std::get<std::int64_t>(*v));
  const double* x = value_as<double>(*this, name, type_text(AttrType::number));
  return x ? std::optional<double>(*x) : std::nullopt;
}

std::optional<std::int64_t> Attrs::integer(std::string_view name) const {
  const std::int64_t* x = value_as<std::int64_t>(*this, name, type_text(AttrType::integer));
  return x ? std::optional<std::int64_t>(*x) : std::nullopt;
}

std::optional<DType> Attrs::dtype(std::string_view name) const {
  const std::string* x = value_as<std::string>(*this, name, type_text(AttrType::dtype));
  if (!x) return std::nullopt;
  try {
    return parse_dtype(*x);
  } catch (const DtypeError& e) {
    throw DtypeError(fmt::format("attribute {}: {}", printable_name(name), e.what()));
  }
}

std::optional<std::vector<std::int64_t>> Attrs::extents(std::string_view name) const {
  const auto* x = value_as<std::vector<std::int64_t>>(*this, name, type_text(AttrType::extents));
  return x ? std::optional<std::vector<std::int64_t>>(*x) : std::nullopt;
}

std::optional<std::string> Attrs::text(std::string_view name) const {
  const std::string* x = value_as<std::string>(*this, name, "a string");
  return x ? std::optional<std::string>(*x) : std::nullopt;
}

bool Attrs::flag(std::string_view name) const {
  const bool* x = value_as<bool>(*this, name, type_text(AttrType::flag));
  return x && *x;
}

}  // namespace kiln
