// RapidCheck draws a random seed unless RC_PARAMS names one. CI must be deterministic, so a
// fixed seed is added before the first property runs (RapidCheck reads RC_PARAMS once,
// lazily). Soak runs pick their own: RC_PARAMS="max_success=5000 seed=$RANDOM", and a
// failure is replayed with the RC_PARAMS="reproduce=..." line RapidCheck prints (left as is).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

// 300 cases per property by default (RapidCheck's own default is 100): the whole run stays
// within seconds on 2 cores.
const bool kSeedFixed = [] {
  const char* env = std::getenv("RC_PARAMS");
  std::string params = env ? env : "";
  const bool replay = params.find("reproduce=") != std::string::npos;
  if (params.find("seed=") == std::string::npos && !replay) params += " seed=20250617";
  if (params.find("max_success=") == std::string::npos && !replay) params += " max_success=300";
  setenv("RC_PARAMS", params.c_str(), 1);
  return true;
}();

TEST(RapidCheckSeed, IsFixedUnlessTheCallerNamesOne) {
  ASSERT_TRUE(kSeedFixed);
  const std::string params = std::getenv("RC_PARAMS");
  EXPECT_TRUE(params.find("seed=") != std::string::npos ||
              params.find("reproduce=") != std::string::npos)
      << params;
}

}  // namespace
