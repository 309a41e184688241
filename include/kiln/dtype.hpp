#pragma once
/// \file
/// Element types kiln knows, their sizes and names.

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln {

/// Element type of a tensor. `boolean` is one byte, true where nonzero.
enum class DType { f32, f16, bf16, boolean };

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16, DType::boolean};
inline constexpr DType kFloatDTypes[] = {DType::f32, DType::f16, DType::bf16};

/// Bytes per element.
std::size_t size_of(DType t);
/// The name used in graph files and messages: f32, f16, bf16, bool.
std::string_view name_of(DType t);
/// The CUDA C++ type the kernel templates use for it (float, kiln::half, kiln::bf16, kiln::bool8).
std::string_view device_type_of(DType t);
/// Parses a name of name_of(); throws DtypeError naming the accepted names otherwise.
DType parse_dtype(std::string_view name);
/// True for f32, f16, bf16.
bool is_float(DType t);

}  // namespace kiln

namespace kiln {

/// Host-side element conversion (round to nearest even), for filling and reading tensors:
/// writes `value` as one element of `t` at `dst`.
void store_element(DType t, double value, void* dst);
/// Reads one element of `t` at `src`.
double load_element(DType t, const void* src);

}  // namespace kiln
