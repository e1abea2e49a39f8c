// The `dsv4` command line, in-process: --help on every subcommand, every documented range
// enforced with the option and the range in the message (the values that used to crash,
// hang or be silently truncated), and the exit codes 0 / 1 / 2 / 3.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "cli_test_util.h"
#include "harness/errors.h"
#include "optimized/host_builder.h"

namespace dsv4::harness::testing {
namespace {

TEST(Cli, HelpOnEverySubcommandExitsZero) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--help"},
                                               {"-h"},
                                               {"help"},
                                               {"verify", "--help"},
                                               {"replay", "--help"},
                                               {"demo", "--help"},
                                               {"verify", "--steps", "3", "--help"}}) {
    SCOPED_TRACE(args.front() + (args.size() > 1 ? " " + args[1] : ""));
    const CliRun r = dsv4(args);
    EXPECT_EQ(r.code, kExitPass) << r.all();
    EXPECT_CONTAINS(r.out, "Usage: dsv4");
    EXPECT_CONTAINS(r.out, "Exit codes");
  }
  // Each subcommand's help lists its own options with their ranges.
  const CliRun verify = dsv4({"verify", "--help"});
  for (const char* part : {"--max-size Z in 0..100", "--max-tokens M in 1..8192", "--jobs J in 1..1024",
                           "--step I in 0..10^18", "--corrupted-every K in 0..2^31-1", "--max-step-bytes",
                           "--mode seed|split|tail|all"})
    EXPECT_CONTAINS(verify.out, part);
  const CliRun replay = dsv4({"replay", "--help"});
  for (const char* part : {"DIR", "--allow-content-errors", "--max-capture-bytes", "harness/capture.cpp"})
    EXPECT_CONTAINS(replay.out, part);
}

TEST(Cli, ReplayHelpDoesNotLoadACaptureNamedHelp) {
  const CliRun r = dsv4({"replay", "--help"});
  EXPECT_EQ(r.code, kExitPass);
  EXPECT_NOT_CONTAINS(r.all(), "manifest.json: file not found");
}

TEST(Cli, UsageErrorsExitTwo) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{},
                                               {"frobnicate"},
                                               {"verify", "--no-such-flag"},
                                               {"verify", "extra"},
                                               {"replay"},
                                               {"verify", "--steps"},
                                               {"verify", "--schedule", "llama"},
                                               {"verify", "--backend", "tpu"},
                                               {"verify", "--mode", "fused"},
                                               {"demo", "now"}}) {
    const CliRun r = dsv4(args);
    EXPECT_EQ(r.code, kExitInvalidInput) << (args.empty() ? "(none)" : args.front()) << "\n" << r.all();
  }
}

// Issue reproduction: `verify --steps 3 --max-size 4294967295` was SIGFPE (a modulus of 0).
TEST(Cli, MaxSizeBeyondInt32IsRejectedNotADivisionByZero) {
  const CliRun r = dsv4({"verify", "--steps", "3", "--max-size", "4294967295"});
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_CONTAINS(r.err, "--max-size");
  EXPECT_CONTAINS(r.err, "0..100");
}

// Issue reproduction: `verify --step 9223372036854775807` never finished (signed overflow).
TEST(Cli, StepAtInt64MaxIsRejectedAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  const CliRun r = dsv4({"verify", "--step", "9223372036854775807"});
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_CONTAINS(r.err, "--step");
  EXPECT_CONTAINS(r.err, "0..1000000000000000000");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  // The largest allowed index runs: one step, no overflow.
  const CliRun last = dsv4({"verify", "--step", "1000000000000000000", "--quiet", "--backend", "host"});
  EXPECT_EQ(last.code, kExitPass) << last.all();
  EXPECT_CONTAINS(last.out, "result: PASS, 0 mismatch(es) in 1 steps");
}

// Issue reproduction: `--max-tokens 2147483648` ran as "at most -2147483648 tokens" and
// passed; the same for --max-size, --jobs and --corrupted-every.
TEST(Cli, ValuesBeyondTheirTypeAreRejectedNotTruncated) {
  const std::vector<std::string> malformed = {"18446744073709551616", "-1", "1e3", "0x10", " 5", "5 ", "", "+5"};
  std::vector<std::string> beyond_int32 = malformed;
  beyond_int32.insert(beyond_int32.end(), {"2147483648", "4294967296", "4294967295"});
  for (const char* option :
       {"--max-tokens", "--max-size", "--jobs", "--corrupted-every", "--steps", "--step", "--seed"}) {
    const bool int32_option =
        std::string(option) != "--steps" && std::string(option) != "--step" && std::string(option) != "--seed";
    for (const std::string& value : int32_option ? beyond_int32 : malformed) {
      SCOPED_TRACE(std::string(option) + " '" + value + "'");
      const CliRun r = dsv4({"verify", option, value, "--quiet", "--backend", "host"});
      EXPECT_EQ(r.code, kExitInvalidInput) << r.all();
      EXPECT_CONTAINS(r.err, option);
      EXPECT_CONTAINS(r.err, "allowed range");
      EXPECT_NOT_CONTAINS(r.out, "PASS");
    }
  }
}

// Every documented range: both ends accepted (with --steps 0, nothing runs), one past
// either end rejected with the option and the range named.
TEST(Cli, EveryDocumentedRangeIsEnforced) {
  const struct {
    const char* option;
    const char* min_ok;
    const char* max_ok;
    const char* below;
    const char* above;
    const char* range;
  } cases[] = {
      {"--steps", "0", "1000000000000", "-1", "1000000000001", "0..1000000000000"},
      {"--seed", "0", "18446744073709551615", "-1", "18446744073709551616", "0..18446744073709551615"},
      {"--max-tokens", "1", "8192", "0", "8193", "1..8192"},
      {"--max-size", "0", "100", "-1", "101", "0..100"},
      {"--corrupted-every", "0", "2147483647", "-1", "2147483648", "0..2147483647"},
      {"--jobs", "1", "1024", "0", "1025", "1..1024"},
      {"--max-step-bytes", "1M", "64G", "1048575", "68719476737", "1048576 bytes"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.option);
    for (const char* ok : {c.min_ok, c.max_ok}) {
      // --steps 10^12 runs only one step with --step 0.
      const CliRun r = dsv4({"verify", "--quiet", "--backend", "host", c.option, ok,
                             std::string(c.option) == "--steps" ? "--step" : "--steps", "0"});
      EXPECT_EQ(r.code, kExitPass) << ok << "\n" << r.all();
    }
    for (const char* bad : {c.below, c.above}) {
      const CliRun r = dsv4({"verify", c.option, bad});
      EXPECT_EQ(r.code, kExitInvalidInput) << bad;
      EXPECT_CONTAINS(r.err, c.option);
      EXPECT_CONTAINS(r.err, c.range);
    }
  }
  for (const char* option : {"--max-step-bytes", "--max-capture-bytes"}) {
    const CliRun r = dsv4({"replay", shipped("capture_flash_mixed"), option, "65G"});
    EXPECT_EQ(r.code, kExitInvalidInput);
    EXPECT_CONTAINS(r.err, option);
    EXPECT_CONTAINS(r.err, "allowed range");
  }
}

// A single step reports what it runs; --max-tokens is honoured.
TEST(Cli, VerifyRunsAndPasses) {
  const CliRun r =
      dsv4({"verify", "--steps", "12", "--max-tokens", "32", "--jobs", "2", "--quiet", "--backend", "host"});
  EXPECT_EQ(r.code, kExitPass) << r.all();
  EXPECT_CONTAINS(r.out, "at most 32 tokens a step");
  EXPECT_CONTAINS(r.out, "result: PASS, 0 mismatch(es) in 12 steps");
}

// SPEC §8: --mode adds a row per mode; a mismatch's replay line names the mode (its steps draw
// index sources, so the mode is part of what the step is).
TEST(Cli, VerifyInEveryModeRunsAndPasses) {
  const CliRun r = dsv4({"verify", "--steps", "12", "--max-tokens", "32", "--quiet", "--backend", "host", "--mode", "all"});
  EXPECT_EQ(r.code, kExitPass) << r.all();
  EXPECT_CONTAINS(r.out, "modes: all (index sources drawn, one launch checked)");
  EXPECT_CONTAINS(r.out, "  host split ");
  EXPECT_CONTAINS(r.out, "  host tail ");
  EXPECT_CONTAINS(r.out, "result: PASS, 0 mismatch(es) in 12 steps");
  const CliRun seed = dsv4({"verify", "--steps", "3", "--quiet", "--backend", "host"});
  EXPECT_NOT_CONTAINS(seed.out, "host split");
  EXPECT_NOT_CONTAINS(seed.out, "modes:");
}

// Adds one to one element of every 5th build: the optimized path disagrees with the reference.
class Faulty final : public opt::MixedSparseIndicesBuilder {
 public:
  Faulty() : inner_(opt::make_host_builder()) {}
  opt::Backend backend() const override { return inner_->backend(); }
  opt::BuiltIndices build(const opt::BuildRequest& request) override {
    opt::BuiltIndices b = inner_->build(request);
    if (++builds_ % 5 == 0 && b.num_tokens > 0 && b.width > 0) b.sparse_indices[0] += 1;
    return b;
  }
  int64_t take_content_errors() override { return inner_->take_content_errors(); }
  void release_outputs() override { inner_->release_outputs(); }

 private:
  std::unique_ptr<opt::MixedSparseIndicesBuilder> inner_;
  int64_t builds_ = 0;
};

BuilderFactory faulty() {
  return [](opt::Backend) -> std::unique_ptr<opt::MixedSparseIndicesBuilder> { return std::make_unique<Faulty>(); };
}

// The exit codes distinguish a mismatch (1) from invalid input (2) from an internal error (3).
TEST(Cli, ExitCodesSeparateMismatchInvalidInputAndInternalError) {
  EXPECT_EQ(dsv4({"verify", "--steps", "6", "--quiet", "--backend", "host"}).code, kExitPass);
  const CliRun mismatch = dsv4({"verify", "--steps", "6", "--quiet", "--backend", "host"}, faulty());
  EXPECT_EQ(mismatch.code, kExitMismatch) << mismatch.all();
  EXPECT_CONTAINS(mismatch.out, "result: FAIL");
  EXPECT_CONTAINS(mismatch.out, "replay: dsv4 verify");
  const CliRun split = dsv4({"verify", "--steps", "6", "--quiet", "--backend", "host", "--mode", "split"}, faulty());
  EXPECT_EQ(split.code, kExitMismatch) << split.all();
  EXPECT_CONTAINS(split.out, "[host split");
  EXPECT_CONTAINS(split.out, "--mode split --step");

  EXPECT_EQ(dsv4({"replay", shipped("capture_flash_mixed"), "--backend", "host"}).code, kExitPass);
  const CliRun replay_mismatch = dsv4({"replay", shipped("capture_flash_mixed"), "--backend", "host"}, faulty());
  EXPECT_EQ(replay_mismatch.code, kExitMismatch) << replay_mismatch.all();

  const CliRun invalid = dsv4({"replay", "/nonexistent/capture"});
  EXPECT_EQ(invalid.code, kExitInvalidInput);
  EXPECT_CONTAINS(invalid.err, "invalid input");

  const BuilderFactory throwing = [](opt::Backend) -> std::unique_ptr<opt::MixedSparseIndicesBuilder> {
    throw std::logic_error("planted failure");
  };
  const CliRun internal = dsv4({"verify", "--steps", "2", "--quiet", "--backend", "host"}, throwing);
  EXPECT_EQ(internal.code, kExitInternalError) << internal.all();
  EXPECT_CONTAINS(internal.err, "internal error: planted failure");
  const BuilderFactory no_memory = [](opt::Backend) -> std::unique_ptr<opt::MixedSparseIndicesBuilder> {
    throw std::bad_alloc();
  };
  const CliRun oom = dsv4({"verify", "--steps", "2", "--quiet", "--backend", "host"}, no_memory);
  EXPECT_EQ(oom.code, kExitInternalError);
  EXPECT_CONTAINS(oom.err, "out of memory");
}

// Issue reproduction: `--step 99999 --max-size 100000` reached 7.5 GB; the size is capped at
// 100 and every generated step is checked against --max-step-bytes before it is built.
TEST(Cli, GeneratedStepsPastTheStepLimitStopWithTheLimitNamed) {
  EXPECT_EQ(dsv4({"verify", "--step", "99999", "--max-size", "100000"}).code, kExitInvalidInput);
  // A Pro step of 1024 tokens at full size needs ~190 MB of outputs: above a 1 MiB limit.
  const CliRun r = dsv4({"verify", "--step", "100", "--schedule", "pro", "--max-tokens", "1024", "--max-step-bytes",
                         "1M", "--quiet", "--backend", "host"});
  EXPECT_EQ(r.code, kExitInvalidInput) << r.all();
  EXPECT_CONTAINS(r.err, "verify step 100");
  EXPECT_CONTAINS(r.err, "--max-step-bytes");
  EXPECT_CONTAINS(r.err, "above the limit of 1048576 bytes");
}

}  // namespace
}  // namespace dsv4::harness::testing
