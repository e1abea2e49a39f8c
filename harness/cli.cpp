#include "harness/cli.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/capture.h"
#include "harness/differential.h"
#include "harness/errors.h"
#include "harness/resource_limits.h"
#include "harness/step_factory.h"
#include "harness/verify_run.h"
#include "optimized/cuda_builder.h"

namespace dsv4::harness {
namespace {

constexpr const char* kExitCodes =
    "Exit codes: 0 pass; 1 mismatch (reference vs optimized, builder calls, cache identity);\n"
    "2 invalid input (an option, a malformed or structurally invalid capture, a step past a\n"
    "resource limit, content errors in a capture without --allow-content-errors); 3 internal\n"
    "error (anything else, e.g. out of memory or a CUDA failure).";

// ---- option values: parsed and range-checked as strings, before CLI11 converts them -------

bool parse_u64(const std::string& s, uint64_t& value) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const auto digit = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    v = v * 10 + digit;
  }
  value = v;
  return true;
}

std::string range_text(uint64_t min, uint64_t max) { return std::to_string(min) + ".." + std::to_string(max); }

// An integer in [min, max]; the message names the allowed range (CLI11 prefixes the option).
CLI::Validator integer_in(int64_t min, int64_t max) {
  const std::string range = range_text(static_cast<uint64_t>(min), static_cast<uint64_t>(max));
  return CLI::Validator(
      [min, max, range](std::string& s) -> std::string {
        uint64_t v = 0;
        if (!parse_u64(s, v) || v < static_cast<uint64_t>(min) || v > static_cast<uint64_t>(max)) {
          return "\"" + printable(s, 40) + "\" is not an integer in the allowed range " + range;
        }
        return std::string();
      },
      "");
}

CLI::Validator any_u64() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        uint64_t v = 0;
        if (!parse_u64(s, v)) {
          return "\"" + printable(s, 40) + "\" is not an integer in the allowed range 0..18446744073709551615";
        }
        return std::string();
      },
      "");
}

// A byte count, plain or with a K, M or G suffix (KiB, MiB, GiB), in [min, max]; rewritten
// to plain bytes for CLI11's conversion.
CLI::Validator bytes_in(uint64_t min, uint64_t max) {
  const std::string range = format_bytes(min) + " .. " + format_bytes(max);
  return CLI::Validator(
      [min, max, range](std::string& s) -> std::string {
        std::string digits = s;
        uint64_t scale = 1;
        if (!digits.empty()) {
          const char suffix = digits.back();
          if (suffix == 'K' || suffix == 'k') scale = uint64_t{1} << 10;
          if (suffix == 'M' || suffix == 'm') scale = uint64_t{1} << 20;
          if (suffix == 'G' || suffix == 'g') scale = uint64_t{1} << 30;
          if (scale > 1) digits.pop_back();
        }
        uint64_t v = 0;
        if (!parse_u64(digits, v) || v > max / scale || v * scale < min) {
          return "\"" + printable(s, 40) + "\" is not a byte count in the allowed range " + range;
        }
        s = std::to_string(v * scale);
        return std::string();
      },
      "");
}

std::vector<opt::Backend> parse_backends(const std::string& name) {
  if (name == "host") return {opt::Backend::kHost};
  if (name == "cuda") {
    if (!opt::cuda_device_present()) {
      throw InputError("--backend cuda: no CUDA device present (or built without CUDA)");
    }
    return {opt::Backend::kCuda};
  }
  return backends_present();  // "all" (CLI11 allows nothing else)
}

std::string backend_list(const std::vector<opt::Backend>& backends) {
  std::string s;
  for (opt::Backend b : backends) s += (s.empty() ? "" : ", ") + std::string(opt::backend_name(b));
  return s;
}

// ---- verify -------------------------------------------------------------------------------

// SPEC §8 sharing modes by their command-line names; "all": every one.
std::vector<opt::SharingMode> parse_modes(const std::string& name) {
  if (name == "split") return {opt::SharingMode::kSplit};
  if (name == "tail") return {opt::SharingMode::kTailOnly};
  if (name == "all") return {opt::SharingMode::kSeed, opt::SharingMode::kSplit, opt::SharingMode::kTailOnly};
  return {opt::SharingMode::kSeed};  // "seed" (CLI11 allows nothing else)
}

int run_verify_command(VerifyOptions o, bool quiet, const std::string& schedule_arg, const std::string& backend_arg,
                       const std::string& mode_arg, std::ostream& out, std::ostream& err) {
  o.progress = !quiet;
  o.mode_arg = mode_arg;
  o.modes = parse_modes(mode_arg);
  o.schedule_arg = schedule_arg;
  o.schedules = schedule_arg == "all" ? VerifyOptions().schedules
                                      : std::vector<ScheduleChoice>{*parse_schedule_choice(schedule_arg)};
  o.backend_arg = backend_arg;
  o.backends = parse_backends(backend_arg);
  validate_verify_options(o);

  out << "dsv4 verify: ";
  if (o.only_step >= 0) {
    out << "step " << o.only_step << " of seed " << o.seed;
  } else {
    out << o.steps << " steps from seed " << o.seed;
  }
  out << ", schedule " << o.schedule_arg << ", at most " << o.limits.max_tokens << " tokens a step, "
      << (o.corrupted_every > 0
              ? "every " + std::to_string(o.corrupted_every) + "-th step corrupted (its content errors must match), "
              : std::string())
      << "backends: " << backend_list(o.backends)
      << (o.mode_arg == "seed" ? std::string() : ", modes: " + o.mode_arg + " (index sources drawn, one launch checked)")
      << "\n"
      << std::flush;
  if (o.only_step >= 0) {  // a single step: say what it is
    const StepPlan plan = plan_step(o, o.only_step);
    out << "  step " << o.only_step << ": " << (plan.corrupted ? "corrupted, " : "")
        << describe(draw_planned_step(o, plan)) << "\n";
  }
  const VerifyResult r = run_verify(o, err);
  if (!r.summary.ok()) out << r.summary.report();
  print_summary_table(out, r.summary, r.seconds);
  return r.summary.ok() ? kExitPass : kExitMismatch;
}

// ---- replay -------------------------------------------------------------------------------

int run_replay_command(const std::string& dir, const std::string& backend_arg, bool allow_content_errors,
                       const CaptureLimits& limits, const BuilderFactory& make_builder, std::ostream& out,
                       std::ostream& err) {
  DifferentialOptions options;
  options.backends = parse_backends(backend_arg);
  options.make_builder = make_builder;
  // InputError: malformed, structurally invalid, too large. Persistent buffers (SPEC §7): the
  // graph path too.
  const StepCase c = step_case(load_capture(dir, limits));
  out << "dsv4 replay " << printable(dir) << ": " << describe(c) << "\n  backends: " << backend_list(options.backends)
      << "\n";
  DifferentialChecker checker(options);
  const auto start = std::chrono::steady_clock::now();
  // Content errors are counted on every path and must agree; whether the capture may have
  // any at all is a question about the input, answered below.
  const DifferentialSummary s = checker.check(c, ContentErrorPolicy::kMustMatch, "dsv4 replay " + printable(dir));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!s.ok()) {
    out << s.report();
    print_summary_table(out, s, seconds);
    return kExitMismatch;
  }
  const bool rejected = s.reference_content_errors > 0 && !allow_content_errors;
  print_summary_table(out, s, seconds, rejected ? "INVALID INPUT (content errors)" : "");
  if (rejected) {
    err << "dsv4 replay: capture " << printable(dir) << ": " << s.reference_content_errors
        << " content errors (SPEC §4: block-table lookups past a table's width or at a negative entry, "
           "written -1 and counted), the first in layer "
        << s.reference_first_error_layer << "; every path counted the same. A capture of a valid engine step has "
        << "none: check its block tables, or pass --allow-content-errors to accept them.\n";
    return kExitInvalidInput;
  }
  return kExitPass;
}

// ---- demo ---------------------------------------------------------------------------------

// One row of a builder output, shortened: the first and last few window columns, the first
// few compressed columns, and how many entries each part has.
void print_row(std::ostream& out, const ref::BuilderOutput& o, const ref::Step& step, int32_t window, int32_t t) {
  const auto width = static_cast<int32_t>(o.sparse_indices.cols());
  const bool decode = t < step.num_decode_tokens;
  out << "    token " << t << " (" << (decode ? "decode" : "prefill") << ", request " << step.token_to_req(t)
      << ", position " << ref::token_position(step, t) << "): sparse_lens " << o.sparse_lens(t)
      << "\n      window     [";
  int32_t set = 0;
  for (int32_t c = 0; c < window; ++c) {
    if (o.sparse_indices(t, c) >= 0) ++set;
    if (c < 4 || c >= window - 3) out << (c ? " " : "") << o.sparse_indices(t, c);
    if (c == 4 && window > 7) out << " ...";
  }
  out << "]  " << set << " of " << window << " set\n      compressed [";
  set = 0;
  for (int32_t c = window; c < width; ++c) {
    if (o.sparse_indices(t, c) >= 0) ++set;
    if (c < window + 6) out << (c > window ? " " : "") << o.sparse_indices(t, c);
  }
  if (width - window > 6) out << " ...";
  out << "]  " << set << " of " << width - window << " set\n";
}

int run_demo_command(std::ostream& out) {
  StepShape shape;
  shape.num_decodes = 2;
  shape.decode_tokens_each = 2;  // speculative decoding: 2 tokens per decode request
  shape.decode_context = 1000;
  shape.num_prefills = 1;
  shape.prefill_tokens_each = 4;
  shape.prefill_context = 300;
  shape.seed = 7;
  const ref::ModelSchedule schedule = ref::deepseek_v4_flash();
  const ref::Step step = make_step(shape);
  const std::vector<ref::C4aIndexerOutput> c4a = make_c4a_indexer_outputs(step, schedule, 7);
  const std::vector<ref::BuilderOutput> outputs = ref::run_step_uncached(step, schedule, c4a);

  out << "DeepSeek-V4-Flash, one engine step: " << step.num_requests() << " requests, " << step.num_tokens()
      << " tokens (" << shape.num_decodes << " decode requests of " << shape.decode_tokens_each << " tokens at "
      << shape.decode_context << " tokens of context, " << shape.num_prefills << " prefill chunk of "
      << shape.prefill_tokens_each << " tokens after " << shape.prefill_context << ").\n"
      << "Every layer gets a T x (W + P) matrix of physical KV-cache slots per query token:\n"
      << "columns 0..W-1 the sliding window (SWA cache, window W = " << schedule.window
      << "), columns W.. slots of the\ncompressed cache (C4A: the layer's indexer picks; "
      << "C128A: every compressed token so far); -1 = no entry.\n"
      << "sparse_lens[t] = W + the number of compressed entries the attention reads.\n";
  for (ref::LayerKind kind : {ref::LayerKind::kSwaOnly, ref::LayerKind::kC4A, ref::LayerKind::kC128A}) {
    std::vector<int32_t> layers;
    for (int32_t l = 0; l < schedule.num_layers(); ++l)
      if (ref::layer_kind_from_ratio(schedule.compress_ratios[static_cast<size_t>(l)]) == kind) layers.push_back(l);
    if (layers.empty()) continue;
    const int32_t l = layers.front();
    const ref::BuilderOutput& o = outputs[static_cast<size_t>(l)];
    const ref::BuilderInputs in = ref::layer_builder_inputs(step, schedule, l, &c4a[static_cast<size_t>(l)]);
    out << "\n" << ref::layer_kind_name(kind) << ": " << layers.size() << " layers (";
    for (size_t i = 0; i < layers.size() && i < 6; ++i) out << (i ? " " : "") << layers[i];
    if (layers.size() > 6) out << " ...";
    out << "); layer " << l << ": ratio " << in.ratio << ", topk " << in.topk << ", sparse_indices "
        << o.sparse_indices.rows() << " x " << o.sparse_indices.cols() << " (W " << schedule.window << " + P "
        << o.sparse_indices.cols() - schedule.window << "), content errors " << o.content_errors << "\n";
    const int32_t T = step.num_tokens();
    for (int32_t t : {0, step.num_decode_tokens, T - 1})
      if (t >= 0 && t < T && (t != T - 1 || T - 1 != step.num_decode_tokens))
        print_row(out, o, step, schedule.window, t);
  }

  DifferentialOptions options;
  options.backends = {opt::Backend::kHost};
  const DifferentialSummary s = differential_check(StepCase{step, schedule, c4a, {}, {}, {}}, options);
  const BackendTotals& host = s.backends.front();
  out << "\nOptimized host backend on the same step: " << host.calls_uncached
      << " builder calls without the per-step cache, " << host.calls_cached
      << " with it (1 SWA-only + 1 C128A + 21 C4A); outputs "
      << (s.ok() ? "equal to the reference, element for element" : "DIFFER from the reference:\n" + s.report())
      << ".\n";
  return s.ok() ? kExitPass : kExitMismatch;
}

}  // namespace

int run_dsv4(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
             const BuilderFactory& make_builder) {
  CLI::App app{
      "dsv4: checks the DeepSeek-V4 mixed sparse indices builder (SPEC.md) - the reference against\n"
      "the optimized path, with and without the per-step layer-kind cache, on every backend present.",
      "dsv4"};
  app.require_subcommand(1);
  app.footer(kExitCodes);

  // verify
  VerifyOptions vo;
  std::string schedule_arg = "all", backend_arg = "all", mode_arg = "seed";
  bool quiet = false;
  int64_t max_tokens = vo.limits.max_tokens;
  uint64_t max_step_bytes = vo.resources.max_step_output_bytes;
  CLI::App* verify = app.add_subcommand(
      "verify",
      "Draws N random steps from seed S and checks, for every layer, the reference == the optimized\n"
      "path without the per-step cache == the optimized path with it: indices, lens and content-error\n"
      "counts, element for element; plus the cached path's builder calls (one per cacheable kind\n"
      "present plus one per C4A layer: Flash 23, Pro 31) and buffer identity of cache hits. SPEC §7\n"
      "engine layouts: a third of the steps address packed pools (block spans, base offsets up to\n"
      "2^31; corrupted steps past it), tables have rows past R and padded strides, and a third are\n"
      "also put into persistent buffers (capacities past T, D and R with sentinel request ids, C128A\n"
      "at P_cap, caller-owned outputs), recorded as one step graph and replayed with the run-time\n"
      "sizes read from backend memory: equal to the reference's checked builds, status words too.\n"
      "Prints a progress line on stderr, a summary table (with a SPEC §7 line), and for a mismatch\n"
      "the command that replays its step.");
  verify->add_option("--steps", vo.steps, "number of random steps")
      ->check(integer_in(0, kMaxVerifySteps))
      ->type_name("N in 0..10^12")
      ->capture_default_str();
  verify->add_option("--seed", vo.seed, "seed of the run")
      ->check(any_u64())
      ->type_name("S in 0..2^64-1")
      ->capture_default_str();
  verify
      ->add_option("--schedule", schedule_arg,
                   "random: layer sequences of ratios 0/1/4/128, random window and C4A top-k;\n"
                   "all: the three take turns")
      ->check(CLI::IsMember({"flash", "pro", "random", "all"}).description(""))
      ->type_name("flash|pro|random|all")
      ->capture_default_str();
  verify->add_option("--backend", backend_arg, "all: every backend present")
      ->check(CLI::IsMember({"host", "cuda", "all"}).description(""))
      ->type_name("host|cuda|all")
      ->capture_default_str();
  verify
      ->add_option("--mode", mode_arg,
                   "SPEC §8 sharing modes: seed (SPEC §5's per-kind cache), split (two\n"
                   "segments, one SWA segment per step), tail (tail-only C4A builds); every\n"
                   "mode but seed draws index sources and checks one launch too; all: the three")
      ->check(CLI::IsMember({"seed", "split", "tail", "all"}).description(""))
      ->type_name("seed|split|tail|all")
      ->capture_default_str();
  verify->add_option("--max-tokens", max_tokens, "tokens per step at most")
      ->check(integer_in(1, kMaxTokensPerStep))
      ->type_name("M in 1..8192")
      ->capture_default_str();
  verify
      ->add_option("--max-size", vo.max_size,
                   "caps the RapidCheck size that scales requests, tokens, contexts and\n"
                   "layers (step i uses size i % (Z + 1))")
      ->check(integer_in(0, kMaxRapidCheckSize))
      ->type_name("Z in 0..100")
      ->capture_default_str();
  verify
      ->add_option("--corrupted-every", vo.corrupted_every,
                   "every K-th step carries SPEC §4 content errors, whose counts must\n"
                   "agree between all paths (0: none)")
      ->check(integer_in(0, kMaxCorruptedEvery))
      ->type_name("K in 0..2^31-1")
      ->capture_default_str();
  verify->add_option("--step", vo.only_step, "run only step I of this seed (failure reports print this line)")
      ->check(integer_in(0, kMaxStepIndex))
      ->type_name("I in 0..10^18");
  verify->add_option("--jobs", vo.jobs, "worker threads (default: all cores)")
      ->check(integer_in(1, kMaxJobs))
      ->type_name("J in 1..1024");
  verify
      ->add_option("--max-step-bytes", max_step_bytes,
                   "limit on one step's builder outputs, all layers together (peak\n"
                   "memory is about 3x this per job); a step past it stops the run (exit 2)")
      ->transform(bytes_in(kMinStepOutputBytes, kMaxStepOutputBytes))
      ->type_name("B in 1M..64G")
      ->capture_default_str();
  verify->add_flag("--quiet", quiet, "no progress line");
  verify->footer(kExitCodes);

  // replay
  std::string replay_dir, replay_backend = "all";
  bool allow_content_errors = false;
  CaptureLimits limits;
  CLI::App* replay = app.add_subcommand(
      "replay",
      "Loads a captured engine step (DIR/manifest.json + .npy files; the format is documented at the top\n"
      "of harness/capture.cpp and in the README) and runs the same check on it. A capture of an engine's\n"
      "persistent buffers (format version 2, SPEC §7: capacities, run-time sizes, block spans and base\n"
      "offsets, table row strides) is also recorded as one step graph over those buffers and replayed.\n"
      "A malformed or structurally invalid capture is invalid input (exit 2), reported with the file,\n"
      "field, layer and row. Content errors must be 0 unless --allow-content-errors.");
  replay->add_option("DIR", replay_dir, "the capture directory")->required()->type_name("");
  replay->add_option("--backend", replay_backend, "all: every backend present")
      ->check(CLI::IsMember({"host", "cuda", "all"}).description(""))
      ->type_name("host|cuda|all")
      ->capture_default_str();
  replay->add_flag("--allow-content-errors", allow_content_errors,
                   "accept SPEC §4 content errors (their counts must still agree on\n"
                   "every path)");
  replay
      ->add_option("--max-step-bytes", limits.resources.max_step_output_bytes,
                   "limit on the step's builder outputs, all layers together (peak\n"
                   "memory is about 3x this)")
      ->transform(bytes_in(kMinStepOutputBytes, kMaxStepOutputBytes))
      ->type_name("B in 1M..64G")
      ->capture_default_str();
  replay
      ->add_option("--max-capture-bytes", limits.max_capture_bytes,
                   "limit on the .npy data of the capture together, checked from each\n"
                   "file's header before its data is read")
      ->transform(bytes_in(kMinStepOutputBytes, kMaxStepOutputBytes))
      ->type_name("B in 1M..64G")
      ->capture_default_str();
  replay->footer(kExitCodes);

  app.add_subcommand("demo",
                     "Runs the reference on a small DeepSeek-V4-Flash step and prints, per layer\n"
                     "kind, the shape of the indices and a few rows.");

  // `dsv4 help` and `dsv4` alone: the overview (the latter is a usage error).
  if (args.size() == 2 && args[1] == "help") {
    out << app.help();
    return kExitPass;
  }
  if (args.size() < 2) {
    err << app.help();
    return kExitInvalidInput;
  }

  std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11 takes them reversed, no argv[0]
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);  // 0; the help of the subcommand that was asked
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    const CLI::App* sub = app.get_subcommands().empty() ? &app : app.get_subcommands().front();
    err << "dsv4" << (sub == &app ? "" : " " + sub->get_name()) << ": " << e.what() << "\n"
        << "Run 'dsv4" << (sub == &app ? "" : " " + sub->get_name()) << " --help' for the options and their ranges.\n";
    return kExitInvalidInput;
  }

  const std::string command = app.get_subcommands().front()->get_name();
  try {
    if (command == "verify") {
      vo.limits.max_tokens = static_cast<int32_t>(max_tokens);
      vo.resources.max_step_output_bytes = max_step_bytes;
      vo.make_builder = make_builder;
      return run_verify_command(vo, quiet, schedule_arg, backend_arg, mode_arg, out, err);
    }
    if (command == "replay") {
      return run_replay_command(replay_dir, replay_backend, allow_content_errors, limits, make_builder, out, err);
    }
    return run_demo_command(out);
  } catch (const InputError& e) {
    out << std::flush;
    err << "dsv4 " << command << ": invalid input: " << e.what() << "\n";
    return kExitInvalidInput;
  } catch (const std::bad_alloc& e) {
    out << std::flush;
    err << "dsv4 " << command << ": internal error: out of memory (" << e.what() << ")"
        << (command == "verify" ? "; fewer --jobs, a lower --max-tokens or --max-step-bytes need less" : "") << "\n";
    return kExitInternalError;
  } catch (const std::exception& e) {
    out << std::flush;
    err << "dsv4 " << command << ": internal error: " << e.what() << "\n";
    return kExitInternalError;
  }
}

}  // namespace dsv4::harness
