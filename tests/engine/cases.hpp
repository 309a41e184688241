#pragma once
// The sweep of the elementwise suite: every op x dtype x layout, shared by the CPU compile
// sweep and the GPU correctness sweep.

#include <kiln/graph.hpp>
#include <kiln/kiln.hpp>
#include <string>
#include <vector>

namespace kiln::test {

/// x [N, C, *spatial] of `s` as a graph value `name`: an input, or (channels_last) an input [N,
/// *spatial, C] permuted to it, the strides of an NHWC tensor seen as NCHW.
Value nchw(Graph& g, const Shape& s, DType t, bool channels_last, const std::string& name = "x");

enum class Layout { contiguous, strided, broadcast, scalar, misaligned };
const char* name_of(Layout l);

/// One operand: a scalar, or a view into an allocation of `alloc` elements at element
/// `offset` (misaligned views start at offset 1).
struct OperandSpec {
  bool scalar = false;
  double value = 0;
  TensorView view;  ///< data unset; shape, strides, dtype set
  std::int64_t offset = 0;
  std::int64_t alloc = 0;
};

struct Case {
  std::string op;
  Attrs attrs;
  std::vector<OperandSpec> operands;
  double lo = -4, hi = 4, step = 0;  ///< input values
  std::string label;                 ///< "add f32 broadcast [7, 33]"
};

/// Every op x dtype x layout on an R x C result. Layouts: contiguous; strided (first
/// operand a transposed view); broadcast ([C] or [R, 1] partners, or an expanded view);
/// scalar (binary ops with a scalar second operand); misaligned (data one element past an
/// aligned address) when `with_misaligned`.
std::vector<Case> sweep(std::int64_t rows, std::int64_t cols, bool with_misaligned);

/// Every row op on x [R, C] of dtype t, in 4 patterns: plain; behind a silu(x*0.5 + mask)
/// prologue (keepdim for reductions); with weight and bias (norms); with an epilogue
/// y*2 + x that is an output beside the row result (ops that write rows).
std::vector<Graph> row_graphs(DType t, std::int64_t rows, std::int64_t cols);

/// The ops that work along any axis on x of `shape` and dtype t: every reduction along each
/// axis (keepdim on odd axes) and over all elements (keepdim when `shape` has rank 2),
/// softmax and log_softmax along each axis but the last; each behind a silu(x*0.5 + b)
/// prologue (b broadcast along the first axis), softmax also with an epilogue y*2 + x.
std::vector<Graph> axis_graphs(DType t, const Shape& shape);

}  // namespace kiln::test
