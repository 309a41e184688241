#pragma once
// The fuzz generator's group_norm and batch_norm draws (generator.cpp).

#include <cstdint>
#include <kiln/graph.hpp>
#include <random>

namespace kiln::fuzz {

/// group_norm of `a` seen as [N, C, *spatial]: a rank-2 value with a unit spatial dim added, a
/// rank-3 one as it is or, half the time, with its last two dims swapped (C then contiguous: a
/// channels_last view, read in place); groups a divisor of C (1 and C among them); weight and
/// bias [C] of a's dtype as new inputs of `g` named after `id`, each now and then. ShapeError
/// for a value of rank 1 or 0, DtypeError for one not float, before `g` changes (the generator
/// draws again).
Value group_norm_draw(Graph& g, const Value& a, std::mt19937_64& rng, int id);

/// kiln::batch_norm of `a` seen as [N, C, *] (inference form): mean, variance and, now and then,
/// weight and bias as new [C] inputs of `g` named after `id`, of a's dtype or f32; the variance
/// made positive before use. ShapeError for a value of rank < 2, DtypeError for one not float,
/// before `g` changes.
Value batch_norm_draw(Graph& g, const Value& a, std::mt19937_64& rng, int id);

}  // namespace kiln::fuzz
