// bench_inputs: writes the exact builder inputs of every kernel_bench configuration, and the
// reference's outputs for them, so that another builder (bench/peer/run_peer.py, a Triton
// peer) is checked and timed on the very same inputs (issue 8).
//
// usage: bench_inputs --out DIR [--filter REGEX] [--step]
//   DIR/<model>_<kind>_<case>/  one kernel config, key "<model>/<kind>/<case>" (kernel_bench's
//                               kernel/ names): one .npy per ref::BuilderInputs tensor, the
//                               reference's ref_sparse_indices.npy / ref_sparse_lens.npy, and
//                               meta.json (scalars, which optional inputs are present, T, D, R,
//                               width W+P, build_bytes() total, content_errors).
//   DIR/step_<model>_<case>/    with --step: step.json (the layer schedule) and one folder per
//                               layer kind present, same layout, holding what step_bench stages
//                               for the first layer of that kind (every layer of a kind gets the
//                               same content: checked here for the C4A copies).
// REGEX is searched (std::regex_search) in the key; step folders match on "step/<model>/<case>".
// The inputs come from the functions kernel_bench and step_bench use (make_host_step,
// bench_layer_inputs), never from a second generator.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_cases.h"
#include "bench/bench_common.h"
#include "bench/build_bytes.h"
#include "harness/counting_builder.h"
#include "harness/npy.h"

namespace dsv4::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void write_matrix(const fs::path& dir, const char* name, const ref::IndexMatrix& m) {
  harness::npy::write_file((dir / name).string(),
                           harness::npy::encode_int32({m.rows(), m.cols()}, m.data()));
}

void write_vector(const fs::path& dir, const char* name, const ref::IndexVector& v) {
  harness::npy::write_file((dir / name).string(), harness::npy::encode_int32({v.size()}, v.data()));
}

// One build's inputs, the reference's outputs and meta.json into `dir`; returns the meta.
json write_build(const fs::path& dir, const ref::BuilderInputs& in, json meta) {
  fs::create_directories(dir);
  const auto D = static_cast<int32_t>(in.decode_swa_indices.rows());
  const auto Kd = static_cast<int32_t>(in.decode_compressed.cols());
  write_matrix(dir, "decode_swa_indices.npy", in.decode_swa_indices);
  // Absent means Kd == 0 (SPEC §3); a 0-row matrix with Kd columns still sets the width P.
  const bool has_decode_compressed = Kd > 0;
  if (has_decode_compressed) write_matrix(dir, "decode_compressed.npy", in.decode_compressed);
  if (in.decode_compressed_lens) {
    write_vector(dir, "decode_compressed_lens.npy", *in.decode_compressed_lens);
  }
  if (in.decode_valid) {
    harness::npy::write_file((dir / "decode_valid.npy").string(),
                             harness::npy::encode_uint8({D}, in.decode_valid->data()));
  }
  write_matrix(dir, "prefill_topk.npy", in.prefill_topk);
  write_vector(dir, "query_start_loc.npy", in.query_start_loc);
  write_vector(dir, "seq_lens.npy", in.seq_lens);
  write_vector(dir, "token_to_req.npy", in.token_to_req);
  write_matrix(dir, "swa_block_table.npy", in.swa.block_table);
  if (in.compressed) write_matrix(dir, "compressed_block_table.npy", in.compressed->block_table);

  const ref::BuilderOutput want = ref::build_mixed_sparse_indices(in);
  write_matrix(dir, "ref_sparse_indices.npy", want.sparse_indices);
  write_vector(dir, "ref_sparse_lens.npy", want.sparse_lens);

  const BuildBytes bytes = build_bytes(in);
  meta["window"] = in.window;
  meta["ratio"] = in.ratio;
  meta["topk"] = in.topk;
  meta["decode_local"] = in.decode_local;
  meta["swa_block_size"] = in.swa.block_size;
  meta["compressed_block_size"] = in.compressed ? json(in.compressed->block_size) : json(nullptr);
  meta["present"] = {{"decode_compressed", has_decode_compressed},
                     {"decode_compressed_lens", in.decode_compressed_lens.has_value()},
                     {"decode_valid", in.decode_valid.has_value()},
                     {"compressed_block_table", in.compressed.has_value()}};
  meta["T"] = in.token_to_req.size();
  meta["D"] = D;
  meta["R"] = in.seq_lens.size();
  meta["Kd"] = Kd;
  meta["Kp"] = in.prefill_topk.cols();
  meta["width"] = want.sparse_indices.cols();
  meta["bytes"] = bytes.total();
  meta["bytes_breakdown"] = {{"outputs", bytes.outputs},
                             {"decode_inputs", bytes.decode_inputs},
                             {"prefill_topk", bytes.prefill_topk},
                             {"metadata", bytes.metadata},
                             {"block_tables", bytes.block_tables}};
  meta["content_errors"] = want.content_errors;
  meta["commit"] = build_commit();
  std::ofstream(dir / "meta.json") << meta.dump(2) << "\n";
  return meta;
}

// std::equal, not Eigen's ==: the latter's cwiseEqual().all() was 10x slower here (1 GB of
// Pro C4A copies per step).
bool same(const ref::IndexMatrix& a, const ref::IndexMatrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::equal(a.data(), a.data() + a.size(), b.data());
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void report(const json& meta, std::chrono::steady_clock::time_point t0) {
  std::printf("bench_inputs: %-40s T=%-6lld width=%-5lld bytes=%-10lld content_errors=%lld (%.1f s)\n",
              meta["key"].get<std::string>().c_str(), meta["T"].get<long long>(),
              meta["width"].get<long long>(), meta["bytes"].get<long long>(),
              meta["content_errors"].get<long long>(), seconds_since(t0));
  std::fflush(stdout);
}

// The kernel configs, in kernel_bench's order: model x kind present x case. Returns the count.
int export_kernel_configs(const fs::path& out, const std::regex& filter) {
  int written = 0;
  for (const std::string& model : model_names()) {
    const ref::ModelSchedule full = model_schedule(model);
    for (ref::LayerKind kind : kinds_present(full)) {
      const std::string kind_name = ref::layer_kind_name(kind);
      for (const BenchCase& c : bench_cases()) {
        const std::string key = model + "/" + kind_name + "/" + c.name;
        if (!std::regex_search(key, filter)) continue;
        const auto t0 = std::chrono::steady_clock::now();
        // As kernel_bench's staged_layer: a one-layer schedule, its step, layer 0's inputs.
        const ref::ModelSchedule schedule = single_layer_schedule(full, kind);
        const HostStep host = make_host_step(c.shape, schedule);
        const ref::BuilderInputs in = bench_layer_inputs(host.step, schedule, host.c4a_per_layer, 0);
        const json meta = write_build(out / (model + "_" + kind_name + "_" + c.name), in,
                                      {{"key", key}, {"model", model}, {"kind", kind_name},
                                       {"case", c.name}, {"description", describe(c.shape)}});
        report(meta, t0);
        ++written;
      }
    }
  }
  return written;
}

// The step configs: step_bench's whole-schedule step, one folder per kind present.
int export_steps(const fs::path& out, const std::regex& filter) {
  int written = 0;
  for (const std::string& model : model_names()) {
    const ref::ModelSchedule schedule = model_schedule(model);
    for (const BenchCase& c : bench_cases()) {
      const std::string key = "step/" + model + "/" + c.name;
      if (!std::regex_search(key, filter)) continue;
      const auto t0 = std::chrono::steady_clock::now();
      const fs::path dir = out / ("step_" + model + "_" + c.name);
      // As step_bench's stage_step: the step of the full schedule, one C4A copy per layer.
      const HostStep host = make_host_step(c.shape, schedule);
      json kinds = json::array();
      for (ref::LayerKind kind : kinds_present(schedule)) {
        const std::string kind_name = ref::layer_kind_name(kind);
        std::vector<int32_t> layers;
        for (int32_t l = 0; l < schedule.num_layers(); ++l) {
          if (ref::layer_kind_from_ratio(schedule.compress_ratios[static_cast<size_t>(l)]) == kind) {
            layers.push_back(l);
          }
        }
        const int32_t first = layers.front();
        // The peer builds every C4A layer from its own copy of the first one's top-k: that is
        // only the same work as step_bench's if the copies are equal.
        const ref::C4aIndexerOutput& one = host.c4a_per_layer[static_cast<size_t>(first)];
        for (int32_t l : layers) {
          const ref::C4aIndexerOutput& o = host.c4a_per_layer[static_cast<size_t>(l)];
          if (!same(o.decode_local, one.decode_local) || !same(o.prefill_topk, one.prefill_topk)) {
            throw std::logic_error(key + ": C4A layer " + std::to_string(l) +
                                   " has other top-k content than layer " + std::to_string(first));
          }
        }
        const ref::BuilderInputs in = bench_layer_inputs(host.step, schedule, host.c4a_per_layer, first);
        const json meta = write_build(dir / kind_name, in,
                                      {{"key", key + "/" + kind_name}, {"model", model},
                                       {"kind", kind_name}, {"case", c.name},
                                       {"description", describe(c.shape)}});
        report(meta, t0);
        kinds.push_back({{"kind", kind_name}, {"folder", kind_name}, {"layers", layers},
                         {"cacheable", kind != ref::LayerKind::kC4A}});
      }
      const json step = {{"key", key},
                         {"model", model},
                         {"case", c.name},
                         {"description", describe(c.shape)},
                         {"compress_ratios", schedule.compress_ratios},
                         {"kinds", kinds},
                         {"builds_uncached", harness::expected_builder_calls(schedule, false)},
                         {"builds_cached", harness::expected_builder_calls(schedule, true)},
                         {"commit", build_commit()}};
      std::ofstream(dir / "step.json") << step.dump(2) << "\n";
      ++written;
    }
  }
  return written;
}

int usage(const char* why) {
  std::fprintf(stderr, "bench_inputs: %s\nusage: bench_inputs --out DIR [--filter REGEX] [--step]\n", why);
  return 2;
}

}  // namespace
}  // namespace dsv4::bench

int main(int argc, char** argv) {
  using namespace dsv4::bench;
  std::string out, filter = ".*";
  bool steps = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--out" || a == "--filter") && i + 1 < argc) {
      (a == "--out" ? out : filter) = argv[++i];
    } else if (a == "--step") {
      steps = true;
    } else {
      return usage(("unknown argument '" + a + "'").c_str());
    }
  }
  if (out.empty()) return usage("--out DIR is required");
  try {
    const std::regex re(filter);
    const auto t0 = std::chrono::steady_clock::now();
    const int kernels = export_kernel_configs(out, re);
    const int step_count = steps ? export_steps(out, re) : 0;
    std::printf("bench_inputs: wrote %d kernel configs and %d steps to %s in %.1f s\n", kernels,
                step_count, out.c_str(), seconds_since(t0));
    if (kernels + step_count == 0) {
      std::fprintf(stderr, "bench_inputs: error: the filter '%s' selects nothing\n", filter.c_str());
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_inputs: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
