#pragma once
// TMA tensor maps: a TensorMapDesc and a global address encoded by the driver into the 128
// bytes a kernel takes as a `const __grid_constant__ CUtensorMap`.

#include <array>
#include <cstdint>
#include <kiln/tensor.hpp>
#include <string>
#include <vector>

#include "stages/launch.hpp"

namespace kiln::runtime {

inline constexpr std::size_t kTensorMapBytes = 128;

/// The map of `view` in tiles of `box` (one extent per dim, outermost first as the view's
/// shape), with `swizzle` bytes (0, 32, 64 or 128) of shared-memory swizzle. ArgumentError
/// naming `who` where TMA cannot map it: rank 0 or over 5, an empty tensor, an innermost
/// stride other than 1, another stride or the address not a multiple of 16 bytes, a box extent
/// outside 1..256 or of another rank, an innermost box row not a multiple of 16 bytes or (with
/// a swizzle) longer than the swizzle span.
TensorMapDesc describe_tensor_map(const TensorView& view, const std::vector<std::uint32_t>& box,
                                  int swizzle, const std::string& who);

/// What an im2col map walks (TensorMapDesc::im2col): per copy, `pixels` output pixels of
/// `channels` channels each, the window's corners (lower; upper from the far corner) and steps
/// along {H, W}.
struct Im2col {
  std::uint32_t channels = 0, pixels = 0;
  std::array<int, 2> lower{}, upper{};
  std::array<std::uint32_t, 2> steps{1, 1};
};

/// The im2col map of `x` ([N, C, H, W], its channels contiguous) with 128-byte swizzle.
/// ArgumentError naming `who` where TMA cannot map it: a stride or the address not a multiple
/// of 16 bytes, a corner outside -128..127, a step outside 1..8, more than 256 channels or 1024
/// pixels a copy, a channel row longer than 128 bytes.
TensorMapDesc describe_im2col_map(const TensorView& x, const Im2col& walk, const std::string& who);

/// Encodes `desc` at `address` into `out` (kTensorMapBytes, any alignment). CudaError naming
/// `what` when the driver rejects it (the checks of describe_tensor_map come first, so that is
/// a driver limit kiln does not know of).
void encode_tensor_map(const TensorMapDesc& desc, std::uint64_t address, void* out,
                       const std::string& what);

}  // namespace kiln::runtime
