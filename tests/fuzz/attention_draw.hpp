#pragma once
// The fuzz generator's attention draw (generator.cpp): a node of the attention family over new
// inputs, with the shapes, layouts and attributes its paths differ on.

#include <cstdint>
#include <kiln/graph.hpp>
#include <random>

namespace kiln::fuzz {

/// An attention node of `dtype` over new inputs of `g` named after `id`: batch 1 or 2, 1 or 2
/// key/value heads with 1, 2 or 4 query heads each, query rows 1 to 300 (the decode path up to
/// 16) and keys 1 to 333, D from 8 to 160 (20 and 72: the plain kernel and the mma path's
/// padding), q, k and v contiguous or permuted from [B, S, H, D], causal in both alignments, a
/// mask now and then (additive, or bool by a comparison); the result permuted back to
/// [B, S, H, D] half the time; a quarter of the time the call's attention_lse too, an output of
/// the graph (the same kernel writes it). q = tanh(input), so the scores stay moderate, a third
/// of the time from an f32 input cast to the dtype (attention's kernel computes both as q's
/// prologue).
/// ShapeError where a draw does not fit (the generator draws again).
Value attention_draw(Graph& g, DType dtype, std::mt19937_64& rng, int id);

}  // namespace kiln::fuzz
