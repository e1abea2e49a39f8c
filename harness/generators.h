// RapidCheck generators of realistic engine steps (SPEC §2, §6) and of corrupted ones
// (SPEC §4 content errors). Built from rc::gen combinators (gen::exec), so a failing case
// shrinks toward fewer requests, fewer tokens, shorter contexts, fewer layers and smaller
// windows; every size also scales with RapidCheck's size parameter (0..100).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "harness/step_case.h"

namespace dsv4::harness {

// Which model schedules a generator draws: the real ones, random layer sequences, or any.
enum class ScheduleChoice { kFlash, kPro, kRandom, kAny };
const char* schedule_choice_name(ScheduleChoice choice);  // "flash", "pro", "random", "any"
std::optional<ScheduleChoice> parse_schedule_choice(const std::string& name);

// Upper bounds on a generated step; RapidCheck's size scales within them (size 0: at most
// one token and request, contexts under 16 tokens; size 100: the full bounds).
struct StepLimits {
  int32_t max_tokens = 64;          // T
  int32_t max_requests = 8;         // R
  int32_t max_context = 20000;      // prior context of a request, tokens
  int32_t min_decode_requests = 0;  // forces decode tokens (the corrupted generator needs one)
};

// Random layer sequences of ratios 0/1/4/128 with a random window and C4A top-k.
rc::Gen<ref::ModelSchedule> gen_random_schedule();
rc::Gen<ref::ModelSchedule> gen_schedule(ScheduleChoice choice);

// A structurally valid step: decode requests (speculative multi-token ones, padding tokens
// through decode_valid) then prefill chunks with prior context; empty and single-token
// steps; production (SWA 64, C4A 64, C128A 2) and odd block sizes; block tables that are
// random physical permutations with unused tail entries; max_model_len varied so the C128A
// effective-width cap binds.
rc::Gen<ref::Step> gen_step(StepLimits limits = {});

// The C4A indexer output of every C4A layer of `schedule` (other layers empty): per token
// distinct local indices in [0, (pos + 1) / 4), -1 padded (tail, fewer picks, or scattered);
// width usually the schedule's top-k, sometimes any width >= min_width (0, 1, odd, wider).
rc::Gen<std::vector<ref::C4aIndexerOutput>> gen_c4a_outputs(const ref::Step& step,
                                                            const ref::ModelSchedule& schedule,
                                                            int32_t min_width = 0);

// A valid step case: the reference reports no content error on it.
rc::Gen<StepCase> gen_step_case(ScheduleChoice choice, StepLimits limits = {});

// A structurally valid step with SPEC §4 content errors: always a C4A local index past the
// compressed table's width on a decode token (so at least one error is certain), plus 0..4
// more of: C4A indices past the table or past the request's compressed tokens, negative
// entries in used blocks of the SWA / C4A / C128A tables, negative C4A values other than -1,
// negative unused tail entries. What was done is listed in StepCase::notes.
rc::Gen<StepCase> gen_corrupted_step_case(ScheduleChoice choice, StepLimits limits = {});

// Draws one case from a plain seed, for the command line (same seed + size: same case).
StepCase draw_step_case(const rc::Gen<StepCase>& gen, uint64_t seed, int size);

}  // namespace dsv4::harness
