#pragma once
/// \file
/// Element types kiln knows, their sizes and names.

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln {

/// Element type of a tensor. `boolean` is one byte, true where nonzero; i32 and i64 are two's
/// complement integers.
enum class DType { f32, f16, bf16, boolean, i32, i64 };

inline constexpr DType kAllDTypes[] = {DType::f32,     DType::f16, DType::bf16,
                                       DType::boolean, DType::i32, DType::i64};
inline constexpr DType kFloatDTypes[] = {DType::f32, DType::f16, DType::bf16};
inline constexpr DType kIntDTypes[] = {DType::i32, DType::i64};

/// Bytes per element.
std::size_t size_of(DType t);
/// The name used in graph files and messages: f32, f16, bf16, bool, i32, i64.
std::string_view name_of(DType t);
/// The CUDA C++ type the kernel templates use for it (float, kiln::half, kiln::bf16, kiln::bool8,
/// int, long long).
std::string_view device_type_of(DType t);
/// Parses a name of name_of(); throws DtypeError naming the accepted names otherwise.
DType parse_dtype(std::string_view name);
/// True for f32, f16, bf16.
bool is_float(DType t);
/// True for i32, i64.
bool is_integer(DType t);

}  // namespace kiln

namespace kiln {

/// Host-side element conversion (round to nearest even), for filling and reading tensors:
/// writes `value` as one element of `t` at `dst`. Integers take `value` truncated toward zero,
/// saturated at their range, NaN as 0.
void store_element(DType t, double value, void* dst);
/// Reads one element of `t` at `src` (an i64 beyond 2^53 to the nearest double).
double load_element(DType t, const void* src);

}  // namespace kiln
