#pragma once
// Random valid graphs from the op catalog, reproducible from a seed: chains and DAGs of 1-30
// nodes, broadcasts, several consumers, several outputs, row ops on the last axis, casts
// between f32/f16/bf16, scalars, shapes from 1 to a few thousand, odd and prime extents.

#include <cstdint>
#include <kiln/graph.hpp>

namespace kiln::fuzz {

/// The graph of `seed`. Values stay in ranges where every op is well conditioned in f32, so a
/// GPU run can be compared with the fp64 reference.
Graph random_graph(std::uint64_t seed);

}  // namespace kiln::fuzz
