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

/// Runs `g` on `e` (fused, and unfused too when `unfused`) on random inputs in [-3, 3], every
/// output poisoned first, and compares each output with the fp64 reference: relative error
/// within the loosest dtype's tolerance of the graph (an unfused plan rounds intermediates),
/// softmax outputs relative to 1/C, NaN where and only where the reference is NaN. Returns
/// the mismatches (at most a few per output).
std::vector<std::string> check_on_gpu(Engine& e, const Graph& g, std::mt19937_64& rng, bool unfused = false);

}  // namespace kiln::test
