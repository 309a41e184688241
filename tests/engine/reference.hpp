#pragma once
// The fp64 reference of a whole graph, and the check of a GPU run against it.

#include <map>
#include <random>
#include <string>
#include <vector>

#include <kiln/graph.hpp>

namespace kiln::test {

/// Values of every node, row-major over its shape: every node evaluated on the CPU in fp64
/// from the inputs' (already rounded) values, with no rounding in between.
std::vector<std::vector<double>> evaluate(const Graph& g, const std::map<std::string, std::vector<unsigned char>>& inputs);

/// What the plan of `g` (fused or not) computes, kernel by kernel, in fp64: values inside a
/// kernel are not rounded (the GPU keeps them in f32) except by casts; values a kernel writes
/// are rounded to their dtype, and later kernels read those. Defined for the values the plan
/// writes (its outputs and stored intermediates); empty for the others. With `jitter` > 0,
/// every value read or computed also moves (before any rounding) by 2^-20 of its magnitude
/// plus, for elementwise ops, of its largest operand's: in alternating directions along each
/// row for 1, all up for 2, all down for 3, up only at even (4) or odd (5) node ids, random
/// directions (seeded by `jitter`) otherwise.
std::vector<std::vector<double>> evaluate_plan(const Graph& g, const std::map<std::string, std::vector<unsigned char>>& inputs,
                                               bool fused, int jitter = 0);

/// Runs `g` on `e` (fused, and unfused too when `unfused`) on random inputs in [-3, 3], every
/// output poisoned first, and compares each output with evaluate_plan's model of that plan,
/// and the unfused outputs with the fused ones. Tolerance per element: the output dtype's
/// relative tolerance (softmax outputs relative to 1/C) plus 4x how far the element moves in
/// the eight jittered models (its sensitivity to the GPU's f32 arithmetic, including a
/// rounding that goes the other way). NaN and infinities where and only where the model has them (anything
/// goes where a perturbation changes that). Returns the mismatches (a few per output and kind).
std::vector<std::string> check_on_gpu(Engine& e, const Graph& g, std::mt19937_64& rng, bool unfused = false);

}  // namespace kiln::test
