#pragma once
/// \file
/// Norms composed of kiln's ops on graph values: batch_norm in inference form (running
/// statistics), an elementwise scale and shift per channel.

#include <kiln/error.hpp>
#include <kiln/graph.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// torch.nn.functional.batch_norm(x, mean, var, weight, bias, training=False, eps=eps) over x
/// [N, C, *]: (x - mean[c]) / sqrt(var[c] + eps) * weight[c] + bias[c] for channel c (dim 1),
/// mean, var, weight and bias of shape [C] (weight and bias optional). One elementwise chain:
/// the [C] operands seen as [C, 1, ...] (reshapes that only add unit dims, read in place
/// whatever their strides), scale = weight / sqrt(var + eps) and shift = bias - mean * scale
/// computed per element (once a column where a convolution's or product's block stages them),
/// then x * scale + shift. It fuses with x's producers and consumers (a
/// SiLU after it) and into the epilogue of the kernel making x (a convolution) or a row op's
/// prologue; the result has x's dtype. ShapeError naming the operands where one is not [C].
inline Value batch_norm(Value x, Value mean, Value var, std::optional<Value> weight = std::nullopt,
                        std::optional<Value> bias = std::nullopt, double eps = 1e-5) {
  Graph& g = *x.graph();
  const Shape xs = g.node(x.id()).shape;
  std::vector<std::pair<const char*, Value>> stats = {{"mean", mean}, {"var", var}};
  if (weight) stats.emplace_back("weight", *weight);
  if (bias) stats.emplace_back("bias", *bias);
  if (xs.size() < 2 || xs[1] < 0)
    throw ShapeError("batch_norm: x " + to_string(xs) + " must be [N, C, *] with a static C");
  for (const auto& [name, v] : stats)
    if (g.node(v.id()).shape != Shape{xs[1]})
      throw ShapeError(std::string("batch_norm: ") + name + " " + to_string(g.node(v.id()).shape) +
                       " must be of shape [" + std::to_string(xs[1]) + "] (C, dim 1 of x " +
                       to_string(xs) + ")");
  if (xs.size() > 2) {  // [C, 1, ...]: broadcast along dim 1
    std::vector<std::int64_t> along(xs.size() - 1, 1);
    along[0] = xs[1];
    for (auto* v : {&mean, &var}) *v = reshape(*v, along);
    for (auto* v : {&weight, &bias})
      if (*v) **v = reshape(**v, along);
  }
  Value scale = rsqrt(var + eps);
  if (weight) scale = scale * *weight;
  const Value shift = bias ? *bias - mean * scale : -(mean * scale);
  // In f32 and rounded once to x's dtype, as torch keeps it (the statistics may be f32).
  const Value y = x * scale + shift;
  const DType t = g.node(x.id()).dtype;
  return g.node(y.id()).dtype == t ? y : cast(y, t);
}

}  // namespace kiln
