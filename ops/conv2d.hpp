#pragma once
// conv2d's geometry (ops/conv2d.cpp), shared with the convolution family that computes it.

#include <cstdint>
#include <kiln/attrs.hpp>
#include <kiln/tensor.hpp>

namespace kiln::ops {

/// A convolution's sizes: x [n, c, h, w], w [k, c / groups, r, s], the result [n, k, p, q].
struct ConvGeometry {
  std::int64_t n = 0, c = 0, h = 0, w = 0, k = 0, r = 0, s = 0, p = 0, q = 0;
  std::int64_t groups = 1;
  std::int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
};

/// The geometry of conv2d(x, w) with `attrs` (x and w of rank 4; p and q as computed, < 1 for
/// an empty result).
ConvGeometry conv_geometry(const Shape& x, const Shape& w, const Attrs& attrs);

}  // namespace kiln::ops
