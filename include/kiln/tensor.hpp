#pragma once
/// \file
/// TensorView borrows device memory from the host app; Tensor owns memory kiln allocated.

#include <cstdint>
#include <kiln/dtype.hpp>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

using Shape = std::vector<std::int64_t>;

/// Number of elements of a shape; throws ShapeError on a negative extent or int64 overflow.
std::int64_t numel_of(const Shape& shape);
/// Row-major element strides of a shape.
Shape contiguous_strides(const Shape& shape);
/// "[32768, 4096]".
std::string to_string(const Shape& shape);

/// A borrowed view of device memory: pointer, shape, element strides, dtype.
/// Empty strides mean row-major contiguous. A view with data == 0 describes a tensor
/// without memory; it can be specialized and compiled (kiln::precompile) but not launched.
struct TensorView {
  std::uint64_t data = 0;  ///< CUdeviceptr of element [0, 0, ...]
  Shape shape;
  Shape strides;  ///< in elements, one per dim; empty = contiguous
  DType dtype = DType::f32;
  /// Bytes from `data` the view may touch (a Tensor's view: its allocation); 0 = unknown, then
  /// a view reaching past its memory cannot be caught.
  std::uint64_t capacity = 0;

  std::int64_t numel() const { return numel_of(shape); }
  /// The strides, filled in when they were left empty.
  Shape resolved_strides() const;
  bool is_contiguous() const;
  std::string describe() const;  ///< "bf16[32768, 4096] strides [4096, 1]"
};

/// Checks that `v` can be launched on: strides of its rank, not negative; a data pointer
/// (unless it has no elements or `need_data` is false), aligned to its elements; within its
/// capacity when that is known. ShapeError or ArgumentError starting with `what`.
void check_view(const TensorView& v, std::string_view what, bool need_data = true);
/// Whether check_view(v, ..., need_data) would pass, with no message built (for hot paths:
/// check_view only when this is false).
bool view_ok(const TensorView& v, bool need_data = true) noexcept;

namespace detail {
class Allocation;
}

/// Device memory owned by kiln, with the view describing it. Copies share the memory (counted
/// references); the last one to go frees it.
class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<detail::Allocation> memory, TensorView view);

  const TensorView& view() const { return view_; }
  operator const TensorView&() const { return view_; }
  const Shape& shape() const { return view_.shape; }
  DType dtype() const { return view_.dtype; }
  std::int64_t numel() const { return view_.numel(); }
  std::size_t bytes() const { return std::size_t(numel()) * size_of(view_.dtype); }

  /// Copies `bytes()` bytes from host memory (synchronously).
  void copy_from_host(const void* src);
  /// Copies `bytes()` bytes to host memory (synchronously, after pending work on the device).
  void copy_to_host(void* dst) const;
  /// The same memory seen with `strides` (elements; a permutation of the row-major ones, as a
  /// plan makes a channels_last output). ArgumentError where they reach outside it.
  Tensor with_strides(const Shape& strides) const;
  /// Fills every byte with `value` (used to poison outputs in tests).
  void fill_bytes(unsigned char value);

 private:
  std::shared_ptr<detail::Allocation> memory_;
  TensorView view_;
};

}  // namespace kiln
