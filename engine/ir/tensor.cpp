// dtypes and views: the values an app hands to kiln.
#include <fmt/format.h>

#include <kiln/dtype.hpp>
#include <kiln/error.hpp>
#include <kiln/tensor.hpp>

namespace kiln {

std::size_t size_of(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f16:
      return 2;
    case DType::bf16:
      return 2;
    case DType::boolean:
      return 1;
    case DType::i32:
      return 4;
    case DType::i64:
      return 8;
  }
  return 0;
}

std::string_view name_of(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::boolean:
      return "bool";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
  }
  return "?";
}

std::string_view device_type_of(DType t) {
  switch (t) {
    case DType::f32:
      return "float";
    case DType::f16:
      return "kiln::half";
    case DType::bf16:
      return "kiln::bf16";
    case DType::boolean:
      return "kiln::bool8";
    case DType::i32:
      return "int";
    case DType::i64:
      return "long long";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  for (DType t : kAllDTypes)
    if (name_of(t) == name) return t;
  throw DtypeError(fmt::format("unknown dtype '{}'; expected one of f32, f16, bf16, bool, i32, i64",
                               name));
}

bool is_float(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

bool is_integer(DType t) { return t == DType::i32 || t == DType::i64; }

std::int64_t numel_of(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t e : shape) {
    if (e < 0) throw ShapeError(fmt::format("shape {} has a negative extent", to_string(shape)));
    if (e != 0 && n > INT64_MAX / e)
      throw ShapeError(fmt::format("shape {} has more than 2^63 elements", to_string(shape)));
    n *= e;
  }
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;)
    s[i - 1] = s[i] * std::max<std::int64_t>(shape[i], 1);
  return s;
}

std::string to_string(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Shape TensorView::resolved_strides() const {
  return strides.empty() ? contiguous_strides(shape) : strides;
}

bool TensorView::is_contiguous() const {
  if (strides.empty()) return true;
  if (strides.size() != shape.size()) return false;  // malformed: check_view says so
  const Shape c = contiguous_strides(shape);
  for (std::size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1 && strides[i] != c[i]) return false;
  return true;
}

bool view_ok(const TensorView& v, bool need_data) noexcept {
  if (!v.strides.empty() && v.strides.size() != v.shape.size()) return false;
  std::int64_t n = 1;
  for (std::int64_t e : v.shape) {
    if (e < 0 || (e != 0 && n > INT64_MAX / e)) return false;
    n *= e;
  }
  if ((need_data && v.data == 0 && n > 0) || v.data % size_of(v.dtype) != 0) return false;
  std::uint64_t last = 0;  // offset of the farthest element, in elements
  for (std::size_t d = 0; d < v.shape.size(); ++d) {
    const std::int64_t s = v.strides.empty() ? 0 : v.strides[d];
    if (s < 0) return false;
    if (!v.strides.empty()) last += std::uint64_t(v.shape[d] - 1) * std::uint64_t(s);
  }
  if (v.strides.empty()) last = std::uint64_t(n) - 1;
  return v.capacity == 0 || n == 0 || (last + 1) * size_of(v.dtype) <= v.capacity;
}

void check_view(const TensorView& v, std::string_view what, bool need_data) {
  if (view_ok(v, need_data)) return;
  if (!v.strides.empty() && v.strides.size() != v.shape.size())
    throw ShapeError(fmt::format("{} {} has {} strides for {} dims", what, v.describe(),
                                 v.strides.size(), v.shape.size()));
  for (std::int64_t s : v.strides)
    if (s < 0)
      throw ShapeError(fmt::format(
          "{} {} has a negative stride; kiln reads views with strides >= 0", what, v.describe()));
  const std::int64_t n = numel_of(v.shape);
  if (need_data && v.data == 0 && n > 0)
    throw ArgumentError(fmt::format("{} {} has a null data pointer", what, v.describe()));
  if (v.data % size_of(v.dtype) != 0)
    throw ArgumentError(fmt::format("{} {} at 0x{:x} is not aligned to its {}-byte elements", what,
                                    v.describe(), v.data, size_of(v.dtype)));
  if (v.capacity == 0 || n == 0) return;
  const Shape strides = v.resolved_strides();
  std::uint64_t last = 0;  // offset of the farthest element, in elements
  for (std::size_t d = 0; d < v.shape.size(); ++d)
    last += std::uint64_t(v.shape[d] - 1) * std::uint64_t(strides[d]);
  const std::uint64_t reach = (last + 1) * size_of(v.dtype);
  if (reach > v.capacity)
    throw ArgumentError(fmt::format(
        "{} {} reaches {} bytes from its data pointer but its memory holds {}: the view is "
        "too short for its shape and strides",
        what, v.describe(), reach, v.capacity));
}

std::string TensorView::describe() const {
  std::string s = fmt::format("{}{}", name_of(dtype), to_string(shape));
  if (!strides.empty() && !is_contiguous()) s += " strides " + to_string(strides);
  return s;
}

}  // namespace kiln
