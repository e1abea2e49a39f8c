// SPEC §7 builds worked out by hand (persistent buffers, storage offsets, capacities): the
// reference is tested against them, and every optimized backend against them too.
#pragma once
#include <vector>

#include "harness/hand_cases.h"

namespace dsv4::harness {

std::vector<HandCase> engine_hand_cases();

}  // namespace dsv4::harness
