// SPEC §8 index sources on a generated case: which C4A layers share one indexer. Layers of one
// source carry the same indexer output, as an engine's shared indexer gives them, so that
// sharing their build is right; their top-k (the layout's) may still differ, which keys them
// apart.
#pragma once
#include <cstdint>
#include <vector>

#include <rapidcheck.h>

#include "harness/step_case.h"

namespace dsv4::harness {

// `sources` by layer (-1: none; entries of non-C4A layers ignored) into c.layout.c4a_source;
// every later layer of a source gets the indexer output of the source's first layer.
StepCase with_index_sources(StepCase c, const std::vector<int32_t>& sources);

// Draws an assignment for the case's C4A layers: none; one source for all; consecutive runs of
// layers per source (an indexer per block of layers); a few sources over random layers,
// interleaved; each with some layers left unsourced.
rc::Gen<StepCase> gen_index_sources(StepCase c);

}  // namespace dsv4::harness
