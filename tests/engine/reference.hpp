#pragma once
// The fp64 reference of a whole graph: every node evaluated on the CPU from the inputs'
// (already rounded) values, with no rounding in between.

#include <map>
#include <string>
#include <vector>

#include <kiln/graph.hpp>

namespace kiln::test {

/// Values of every node, row-major over its shape.
std::vector<std::vector<double>> evaluate(const Graph& g, const std::map<std::string, std::vector<unsigned char>>& inputs);

}  // namespace kiln::test
