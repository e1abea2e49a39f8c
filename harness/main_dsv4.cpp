// dsv4: the main job. `verify` checks reference == optimized (uncached and cached) on random
// DeepSeek-V4 steps on every backend present; `replay DIR` does the same on a captured step;
// `demo` shows what the builder produces for one DeepSeek-V4-Flash step.
#include <chrono>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/capture.h"
#include "harness/differential.h"
#include "harness/step_factory.h"
#include "harness/verify_run.h"
#include "optimized/cuda_builder.h"

namespace {

using namespace dsv4;
using namespace dsv4::harness;

constexpr const char* kUsage = R"(usage:
  dsv4 verify [--steps N] [--seed S] [--schedule flash|pro|random|all]
              [--backend host|cuda|all] [--max-tokens M] [--max-size Z]
              [--corrupted-every K] [--step I] [--jobs J] [--quiet]
  dsv4 replay DIR [--backend host|cuda|all] [--allow-content-errors]
  dsv4 demo
  dsv4 --help

verify   Draws N random steps from seed S (default 500 steps, seed 1) and checks, for every
         layer, the reference == the optimized path without the per-step cache == the
         optimized path with it: indices, lens and content-error counts, element for
         element; plus the cached path's builder calls (one per cacheable kind present plus
         one per C4A layer: Flash 23, Pro 31) and buffer identity of cache hits.
           --schedule   flash, pro, random (random layer sequences of ratios 0/1/4/128,
                        random window and C4A top-k) or all (they take turns; default)
           --backend    host, cuda or all (default: every backend present)
           --max-tokens tokens per step at most (default 256); --max-size caps the
                        RapidCheck size (0..100) that scales requests, tokens and contexts
           --corrupted-every K  every K-th step carries SPEC §4 content errors, whose
                        counts must agree between all paths (default 10; 0: none)
           --step I     run only step I of this seed (failure reports print this line)
           --jobs J     worker threads (default: all cores)
         Prints a progress line on stderr and a summary table; exits 1 on any mismatch.
replay   Loads a captured step (manifest.json + .npy files, see harness/capture.h) and runs
         the same check on it. Content errors must be 0 unless --allow-content-errors.
demo     Runs the reference on a small DeepSeek-V4-Flash step and prints, per layer kind,
         the shape of the indices and a few rows.
)";

[[noreturn]] void usage_error(const std::string& message) {
  std::cerr << "dsv4: " << message << "\n\n" << kUsage;
  std::exit(2);
}

int64_t parse_int(const std::string& flag, const std::string& value, int64_t min) {
  try {
    size_t used = 0;
    const long long v = std::stoll(value, &used);
    if (used == value.size() && v >= min) return v;
  } catch (const std::exception&) {
  }
  usage_error(flag + " " + value + ": expected an integer >= " + std::to_string(min));
}

std::vector<opt::Backend> parse_backends(const std::string& name) {
  if (name == "all") return backends_present();
  if (name == "host") return {opt::Backend::kHost};
  if (name == "cuda") {
    if (!opt::cuda_device_present()) {
      std::cerr << "dsv4: --backend cuda: no CUDA device present (or built without CUDA)\n";
      std::exit(2);
    }
    return {opt::Backend::kCuda};
  }
  usage_error("--backend " + name + ": expected host, cuda or all");
}

std::string backend_list(const std::vector<opt::Backend>& backends) {
  std::string s;
  for (opt::Backend b : backends) s += (s.empty() ? "" : ", ") + std::string(opt::backend_name(b));
  return s;
}

int run_verify_command(const std::vector<std::string>& args) {
  VerifyOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    if (flag == "--quiet") {
      o.progress = false;
      continue;
    }
    if (i + 1 >= args.size()) usage_error(flag + ": missing value (or unknown flag)");
    const std::string& value = args[++i];
    if (flag == "--steps") {
      o.steps = parse_int(flag, value, 0);
    } else if (flag == "--seed") {
      o.seed = static_cast<uint64_t>(parse_int(flag, value, 0));
    } else if (flag == "--schedule") {
      o.schedule_arg = value;
      if (value == "all") {
        o.schedules = VerifyOptions().schedules;
      } else if (value == "any" || !parse_schedule_choice(value)) {
        usage_error("--schedule " + value + ": expected flash, pro, random or all");
      } else {
        o.schedules = {*parse_schedule_choice(value)};
      }
    } else if (flag == "--backend") {
      o.backend_arg = value;
      o.backends = parse_backends(value);
    } else if (flag == "--max-tokens") {
      o.limits.max_tokens = static_cast<int32_t>(parse_int(flag, value, 1));
    } else if (flag == "--max-size") {
      o.max_size = static_cast<int>(parse_int(flag, value, 0));
    } else if (flag == "--corrupted-every") {
      o.corrupted_every = static_cast<int>(parse_int(flag, value, 0));
    } else if (flag == "--step") {
      o.only_step = parse_int(flag, value, 0);
    } else if (flag == "--jobs") {
      o.jobs = static_cast<int>(parse_int(flag, value, 1));
    } else {
      usage_error("unknown flag " + flag);
    }
  }
  if (o.backends.empty()) o.backends = backends_present();

  std::cout << "dsv4 verify: ";
  if (o.only_step >= 0) {
    std::cout << "step " << o.only_step << " of seed " << o.seed;
  } else {
    std::cout << o.steps << " steps from seed " << o.seed;
  }
  std::cout << ", schedule " << o.schedule_arg << ", at most " << o.limits.max_tokens
            << " tokens a step, "
            << (o.corrupted_every > 0
                    ? "every " + std::to_string(o.corrupted_every) +
                          "-th step corrupted (its content errors must match), "
                    : std::string())
            << "backends: " << backend_list(o.backends) << "\n"
            << std::flush;
  if (o.only_step >= 0) {  // a single step: say what it is
    const StepPlan plan = plan_step(o, o.only_step);
    std::cout << "  step " << o.only_step << ": " << (plan.corrupted ? "corrupted, " : "")
              << describe(draw_planned_step(o, plan)) << "\n";
  }
  const VerifyResult r = run_verify(o, std::cerr);
  if (!r.summary.ok()) std::cout << r.summary.report();
  print_summary_table(std::cout, r.summary, r.seconds);
  return r.summary.ok() ? 0 : 1;
}

int run_replay_command(const std::vector<std::string>& args) {
  if (args.empty()) usage_error("replay: missing DIR");
  const std::string dir = args[0];
  std::string backend_arg = "all";
  ContentErrorPolicy policy = ContentErrorPolicy::kMustBeZero;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--allow-content-errors") {
      policy = ContentErrorPolicy::kMustMatch;
    } else if (args[i] == "--backend" && i + 1 < args.size()) {
      backend_arg = args[++i];
    } else {
      usage_error("replay: unknown argument " + args[i]);
    }
  }
  DifferentialOptions options;
  options.backends = parse_backends(backend_arg);
  Capture capture = load_capture(dir);
  StepCase c{std::move(capture.step), std::move(capture.schedule), std::move(capture.c4a_per_layer), {}};
  std::cout << "dsv4 replay " << dir << ": " << describe(c) << "\n  backends: " << backend_list(options.backends)
            << "\n";
  DifferentialChecker checker(options);
  const auto start = std::chrono::steady_clock::now();
  const DifferentialSummary s = checker.check(c, policy, "dsv4 replay " + dir);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!s.ok()) std::cout << s.report();
  print_summary_table(std::cout, s, seconds);
  return s.ok() ? 0 : 1;
}

// One row of a builder output, shortened: the first and last few window columns, the first
// few compressed columns, and how many entries each part has.
void print_row(const ref::BuilderOutput& out, const ref::Step& step, int32_t window, int32_t t) {
  const auto width = static_cast<int32_t>(out.sparse_indices.cols());
  const bool decode = t < step.num_decode_tokens;
  std::cout << "    token " << t << " (" << (decode ? "decode" : "prefill") << ", request "
            << step.token_to_req(t) << ", position " << ref::token_position(step, t)
            << "): sparse_lens " << out.sparse_lens(t) << "\n      window     [";
  int32_t set = 0;
  for (int32_t c = 0; c < window; ++c) {
    if (out.sparse_indices(t, c) >= 0) ++set;
    if (c < 4 || c >= window - 3) std::cout << (c ? " " : "") << out.sparse_indices(t, c);
    if (c == 4 && window > 7) std::cout << " ...";
  }
  std::cout << "]  " << set << " of " << window << " set\n      compressed [";
  set = 0;
  for (int32_t c = window; c < width; ++c) {
    if (out.sparse_indices(t, c) >= 0) ++set;
    if (c < window + 6) std::cout << (c > window ? " " : "") << out.sparse_indices(t, c);
  }
  if (width - window > 6) std::cout << " ...";
  std::cout << "]  " << set << " of " << width - window << " set\n";
}

int run_demo_command() {
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

  std::cout << "DeepSeek-V4-Flash, one engine step: " << step.num_requests() << " requests, "
            << step.num_tokens() << " tokens (" << shape.num_decodes << " decode requests of "
            << shape.decode_tokens_each << " tokens at " << shape.decode_context
            << " tokens of context, " << shape.num_prefills << " prefill chunk of "
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
    const ref::BuilderOutput& out = outputs[static_cast<size_t>(l)];
    const ref::BuilderInputs in = ref::layer_builder_inputs(step, schedule, l, &c4a[static_cast<size_t>(l)]);
    std::cout << "\n" << ref::layer_kind_name(kind) << ": " << layers.size() << " layers (";
    for (size_t i = 0; i < layers.size() && i < 6; ++i) std::cout << (i ? " " : "") << layers[i];
    if (layers.size() > 6) std::cout << " ...";
    std::cout << "); layer " << l << ": ratio " << in.ratio << ", topk " << in.topk
              << ", sparse_indices " << out.sparse_indices.rows() << " x " << out.sparse_indices.cols()
              << " (W " << schedule.window << " + P " << out.sparse_indices.cols() - schedule.window
              << "), content errors " << out.content_errors << "\n";
    const int32_t T = step.num_tokens();
    for (int32_t t : {0, step.num_decode_tokens, T - 1})
      if (t >= 0 && t < T && (t != T - 1 || T - 1 != step.num_decode_tokens)) print_row(out, step, schedule.window, t);
  }

  DifferentialOptions options;
  options.backends = {opt::Backend::kHost};
  const DifferentialSummary s = differential_check(StepCase{step, schedule, c4a, {}}, options);
  const BackendTotals& host = s.backends.front();
  std::cout << "\nOptimized host backend on the same step: " << host.calls_uncached
            << " builder calls without the per-step cache, " << host.calls_cached
            << " with it (1 SWA-only + 1 C128A + 21 C4A); outputs "
            << (s.ok() ? "equal to the reference, element for element" : "DIFFER from the reference:\n" + s.report())
            << ".\n";
  return s.ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (args[0] == "verify") return run_verify_command(rest);
    if (args[0] == "replay") return run_replay_command(rest);
    if (args[0] == "demo") return run_demo_command();
  } catch (const std::exception& e) {
    std::cerr << "dsv4 " << args[0] << ": " << e.what() << "\n";
    return 3;
  }
  usage_error("unknown command " + args[0]);
}
