#pragma once
// The depthwise convolution template's block (conv_depthwise.cuh), in plain C++ constants: the
// template lays its threads out with them and the host (engine/families/conv) sizes the grid
// with them.

namespace kiln::conv::depthwise {

constexpr int kThreads = 128;               ///< a block's threads
constexpr int kLanes = 8;                   ///< threads along a pixel's channels: 128 bytes
constexpr int kPixels = kThreads / kLanes;  ///< strips a block computes
constexpr int kStrip = 4;                   ///< output pixels along a row a thread computes

}  // namespace kiln::conv::depthwise
