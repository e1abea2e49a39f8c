// Shared pieces of the harness property tests: the step sizes that keep the whole
// property_tests run within CI's budget, and a readable assertion on a differential summary.
#pragma once
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "harness/differential.h"
#include "harness/generators.h"

namespace dsv4::harness::testing {

// Small enough for hundreds of cases per property on 2 cores; contexts still long enough
// for C128A entries and the effective-width cap.
inline StepLimits small_steps() { return StepLimits{64, 8, 20000, 0}; }

inline constexpr const char* kReplayHint =
    "rerun with the RC_PARAMS=\"reproduce=...\" line RapidCheck prints for this property";

inline DifferentialOptions host_only() {
  DifferentialOptions o;
  o.backends = {opt::Backend::kHost};
  return o;
}

}  // namespace dsv4::harness::testing

// RC_ASSERT with the full mismatch report as the failure message.
#define DSV4_RC_ASSERT_AGREES(summary)                                  \
  do {                                                                  \
    const auto& dsv4_summary_ = (summary);                              \
    if (!dsv4_summary_.ok()) RC_FAIL(dsv4_summary_.report());           \
  } while (false)
