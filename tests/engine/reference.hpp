#pragma once
// The fp64 reference of a whole graph, and the check of a GPU run against it.

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <kiln/graph.hpp>

namespace kiln::test {

/// Per node: the dtype its value is rounded to after it is computed, if any.
using Rounding = std::vector<std::optional<DType>>;

/// Values of every node, row-major over its shape: every node evaluated on the CPU in fp64
/// from the inputs' (already rounded) values, rounded afterwards only where `rounding` says.
std::vector<std::vector<double>> evaluate(const Graph& g, const std::map<std::string, std::vector<unsigned char>>& inputs,
                                          const Rounding& rounding = {});

/// Where a plan rounds (fused: the values its kernels write, and casts; unfused: every value).
/// Inside a fused kernel intermediates stay f32.
Rounding rounding_of(const Graph& g, bool fused);

/// Runs `g` on `e` (fused, and unfused too when `unfused`) on random inputs in [-3, 3], every
/// output poisoned first, and compares each output with the fp64 reference that rounds where
/// the plan rounds, and the unfused outputs with the fused ones. Tolerance per element: the
/// output dtype's relative tolerance (softmax outputs relative to 1/C) plus 4x the element's
/// sensitivity to rounding on the way (how far the references with more and less rounding
/// disagree there). NaN and infinities where and only where every reference has them.
/// Returns the mismatches (at most a few per output and kind).
std::vector<std::string> check_on_gpu(Engine& e, const Graph& g, std::mt19937_64& rng, bool unfused = false);

}  // namespace kiln::test
