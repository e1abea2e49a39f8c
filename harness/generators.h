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

#include "harness/persistent_buffers.h"
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

// How a case of `schedule` is staged (input_layout.h): dense half of the time (shrinking goes
// there), else independent row paddings and misalignments of every matrix input (block tables
// too, with rows past R), C4A layers with their own top-k, and optional inputs dropped:
// decode_valid, the C128A decode lens and, when `may_drop_tables`, a compressed table (lookups
// then go through the SWA table).
rc::Gen<StepLayout> gen_step_layout(const ref::ModelSchedule& schedule, bool may_drop_tables = true);

// How far a step's persistent buffers reach past it (SPEC §7; make_persistent): padded rows,
// decode and prefill rows, requests and table rows past the step's, C128A columns past E,
// caller-owned output rows 0, 4 or 8 wider; shrinks toward exact sizes.
rc::Gen<StepCapacity> gen_step_capacity();

// A valid step case (in a drawn layout): the reference reports no content error on it. Its
// step's paged caches sometimes have a block span and a base offset (SPEC §7: up to the
// highest offset at which every slot fits int32), and a third of the cases are also put into
// persistent buffers (make_persistent: capacities past T, D, T - D and R with stale contents
// and sentinel request ids, tables with rows past R, C128A at P_cap > E, caller-owned output
// rows wider than needed) for the differential's graph path.
rc::Gen<StepCase> gen_step_case(ScheduleChoice choice, StepLimits limits = {});

// A structurally valid step with SPEC §4 content errors: always a C4A local index past the
// compressed table's width on a decode token (so at least one error is certain), plus 0..4
// more of: C4A indices past the table or past the request's compressed tokens, negative
// entries in used blocks of the SWA / C4A / C128A tables, negative C4A values other than -1,
// negative unused tail entries, a base offset that takes slots past 2^31 or below 0 (SPEC
// §7). What was done is listed in StepCase::notes. Its layout keeps the compressed tables
// (through the SWA table an index past the C4A table may be valid). A third are put into
// persistent buffers, half of those with one metadata entry or run-time size broken there (the
// graph path's status words must name it like the reference's).
rc::Gen<StepCase> gen_corrupted_step_case(ScheduleChoice choice, StepLimits limits = {});

// One build's inputs below the step level, for the builder and cache tests: any window,
// ratio (2 and 3 too), block sizes, decode form, with or without lens, decode_valid and a
// compressed table, Kd and Kp above or below topk, sometimes runs of consecutive local indices
// (C128A's positional top-k); structurally valid, and with `corrupt` negative, out-of-width
// and beyond-int32 table entries and wild local indices.
struct BuildLimits {
  int32_t max_requests = 6;
  int32_t max_decode_query = 3;  // speculative decoding; 0 = an empty request
  int32_t max_prefill_query = 12;
  int32_t max_context = 300;
  int32_t max_topk = 24;
  bool corrupt = true;
  bool decode_only = false;  // every request a decode (the decode-only kernels)
  bool prefill_only = false;  // every request a prefill (the prefill-rows kernels)
};
rc::Gen<ref::BuilderInputs> gen_builder_inputs(BuildLimits limits = {});
// SPEC §7 below the step level: gen_builder_inputs with, per paged cache, a block span (none,
// B, above B, multiples of B, the largest the table allows: 64-bit products) and a base offset
// (none, small, near the highest valid one; with `corrupt` also past it and negative, so that
// slots cross 2^31 or fall below 0: content errors), block tables with rows past R, and half
// of the time a row capacity T_cap >= T and a compressed capacity P_cap >= P.
rc::Gen<ref::BuilderInputs> gen_engine_builder_inputs(BuildLimits limits = {});
// A valid engine build (corrupt is ignored) put into persistent buffers with run-time sizes
// (persistent_buffers.h: capacities full of stale values, sentinel request ids); with
// `broken_metadata` one metadata entry or size broken (`corruption` says which).
struct PersistentBuildCase {
  PersistentBuild build;
  std::string corruption;
};
rc::Gen<PersistentBuildCase> gen_persistent_build(BuildLimits limits = {}, bool broken_metadata = false);
// Dense a third of the time, one padding and misalignment for every matrix a third, each
// matrix its own the rest; in the last two, padded block-table rows and caller-owned outputs
// (SPEC §7) sometimes.
rc::Gen<RequestLayout> gen_request_layout();
// "W=4 ratio=4 topk=2 R=2 T=3 D=1 Kd=2 Kp=2 local valid swaB=64 cB=2", then SPEC §7 fields
// given: "swaS=70 swaO=1000 cS=.. cO=.. swarows=5 crows=.. Tcap=6 Pcap=12"
std::string describe(const ref::BuilderInputs& in);

// Draws one value from a plain seed (same seed + size: same value), for the command line and
// seeded tests.
template <class T>
T draw(const rc::Gen<T>& gen, uint64_t seed, int size = rc::kNominalSize) {
  return gen(rc::Random(seed), size).value();
}

}  // namespace dsv4::harness
