// Shared pieces of the harness property tests: the step sizes that keep the whole
// property_tests run within CI's budget, and how a property runs inside a backend TEST_P.
#pragma once
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "harness/differential.h"
#include "harness/generators.h"

namespace dsv4::testing {

// Small enough for hundreds of cases per property on 2 cores; contexts still long enough
// for C128A entries and the effective-width cap.
inline harness::StepLimits small_steps() { return harness::StepLimits{64, 8, 20000, 0}; }

inline constexpr const char* kReplayHint =
    "rerun with the RC_PARAMS=\"reproduce=...\" line RapidCheck prints for this property";

inline harness::DifferentialOptions host_only() {
  harness::DifferentialOptions o;
  o.backends = {opt::Backend::kHost};
  return o;
}

// Runs `property` as RapidCheck runs an RC_GTEST_PROP, inside the current test (a TEST_P of
// a backend, say); a failure prints the counterexample and its RC_PARAMS="reproduce=..." line.
template <class Property>
void check_property(Property&& property) {
  rc::detail::checkGTest(std::forward<Property>(property));
}

}  // namespace dsv4::testing

// RC_ASSERT with the full mismatch report as the failure message.
#define DSV4_RC_ASSERT_AGREES(summary)                                  \
  do {                                                                  \
    const auto& dsv4_summary_ = (summary);                              \
    if (!dsv4_summary_.ok()) RC_FAIL(dsv4_summary_.report());           \
  } while (false)
