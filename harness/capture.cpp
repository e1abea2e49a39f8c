// Step capture format, versions 1 and 2: one engine step as a directory that a Python engine
// can write with numpy.save and json.dump, and `dsv4 replay DIR` can check. Version 2 adds the
// SPEC §7 fields (marked v2), each optional; a v2 field in a version-1 manifest is an error.
//
//   DIR/manifest.json (UTF-8 JSON, one object, nothing after it but whitespace; <= 16 MiB)
//     {"format": "dsv4-step-capture", "version": 1 or 2,
//      "schedule": {"name": str, "compress_ratios": [int, ...], "window": int,
//                   "c4a_topk": int, "main_block_size": int},
//      "step": {"num_decode_tokens": int, "max_model_len": int, "swa_block_size": int,
//               "c4a_block_size": int, "c128a_block_size": int,
//               v2, for each cache X of swa, c4a, c128a: "X_block_span": int (S >= the block
//               size; absent: S = B), "X_base_offset": int (O; absent: 0), "X_table_row_stride":
//               int (the table's row stride in its persistent buffer, >= its NB columns)},
//      "files": {"query_start_loc": name, "seq_lens": name, "token_to_req": name,
//                "decode_valid": name, "swa_block_table": name, "c4a_block_table": name,
//                "c128a_block_table": name},
//      "c4a_layers": [{"layer": int, "decode_local": name, "prefill_topk": name}, ...],
//      v2 "engine": {"num_tokens": int, "num_requests": int, "decode_capacity": int,
//                    "prefill_capacity": int, "c128a_capacity": int,
//                    "output_row_padding": int (optional, 0..64, a multiple of 4)}}
//   DIR/<name>.npy, C order, int32 ('<i4'; '<i8' accepted and narrowed) unless said:
//     query_start_loc (R+1), seq_lens (R), token_to_req (T),
//     decode_valid (D or 0 = all valid) uint8 '|u1' or bool '|b1',
//     swa_block_table (R x NBs), c4a_block_table (R x NB4), c128a_block_table (R x NB128)
//     (v2: R or more rows, a persistent table's rows past R are never read),
//     per C4A layer: decode_local (D x K) and prefill_topk ((T-D) x K), the indexer's local
//     compressed indices, -1 padded. K may be smaller than c4a_topk (the builder pads with -1).
//
// With "engine" (SPEC §7 persistent buffers) the files hold the engine's buffers at their
// capacities: query_start_loc R_cap + 1, seq_lens R_cap, token_to_req T_cap, decode_valid
// engine.decode_capacity (D_cap) or 0, every block table R_cap rows or more, each C4A layer's
// decode_local D_cap and prefill_topk engine.prefill_capacity rows; past the run-time sizes
// (T = engine.num_tokens, D = step.num_decode_tokens, R = engine.num_requests) they hold
// whatever the engine left there (padded token rows: sentinel request ids), never read. The
// live step is their head. `dsv4 replay` checks it like a version-1 capture and also records
// it as one step graph over those buffers (C128A layers at topk = engine.c128a_capacity, P_cap
// >= E; caller-owned outputs output_row_padding wider than their rows) and replays it with the
// run-time sizes.
//
// Rules (each broken one is reported with the file, the field and, where there is one, the
// layer and the row):
//   - compress_ratios: one entry per layer of the main step (1..1024 of them), each 0, 1, 4
//     or 128; window 1..1048576; c4a_topk >= 0; integers must fit int32.
//   - main_block_size: a multiple of 128; c4a_block_size = main_block_size / 4 and
//     c128a_block_size = main_block_size / 128 (SPEC §2); swa_block_size >= 1.
//   - c4a_layers: exactly one entry per C4A layer (ratio 4), none for other layers.
//   - File names are plain names inside DIR. Unknown JSON keys are ignored.
//   - The step is structurally valid (SPEC §4): query_start_loc has R + 1 entries, starts at
//     0, never decreases and ends at T; token_to_req agrees with it; seq_lens[r] is at least
//     its query length and fits its SWA block-table row; num_decode_tokens is a request
//     boundary; decode_valid has D entries or none; every block table has R rows (v2: at
//     least R); C4A files have D and T - D rows.
//   - v2: a table row stride is at least the table's columns; with "engine": R <= R_cap,
//     T <= T_cap, D <= D_cap <= T_cap, T - D <= prefill_capacity, tables of at least R_cap
//     rows, c128a_capacity >= E (SPEC §6) when the schedule has C128A layers.
//   - Limits (CaptureLimits): the .npy data together <= --max-capture-bytes (checked from
//     each file's header before its body is read; a strided table's image counts too), the
//     step's outputs <= --max-step-bytes (with "engine": the step graph's T_cap rows too),
//     rows <= 2^21 columns (resource_limits.h).
// Content errors (SPEC §4: block-table entries that are negative or too few, slots outside
// [0, 2^31) after span and offset) are not structural; `dsv4 replay` counts them.
#include "harness/capture.h"

#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <tuple>

#include "harness/errors.h"
#include "harness/input_file.h"
#include "harness/npy.h"
#include "harness/persistent_buffers.h"
#include "reference/step.h"
#include "reference/step_structure.h"

namespace dsv4::harness {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kFormat = "dsv4-step-capture";
constexpr int kVersion = 2;  // the newest this build reads; it reads 1 too
constexpr const char* kManifest = "manifest.json";
constexpr const char* kStepFiles[] = {"query_start_loc", "seq_lens",        "token_to_req",     "decode_valid",
                                      "swa_block_table", "c4a_block_table", "c128a_block_table"};

// ---- save ---------------------------------------------------------------------------------

std::vector<uint8_t> encode(const ref::IndexVector& v) { return npy::encode_int32({v.size()}, v.data()); }
std::vector<uint8_t> encode(const ref::IndexMatrix& m) {
  return npy::encode_int32({m.rows(), m.cols()}, m.data());  // row-major: C order
}

bool has_indexer_output(const ref::C4aIndexerOutput& out) {
  return out.decode_local.rows() > 0 || out.decode_local.cols() > 0 || out.prefill_topk.rows() > 0 ||
         out.prefill_topk.cols() > 0;
}

std::string layer_file(int32_t layer, const char* what) {
  std::string number = std::to_string(layer);
  if (number.size() < 2) number.insert(0, 2 - number.size(), '0');
  return "c4a_layer" + number + "_" + what + ".npy";
}

// ---- load: the manifest -------------------------------------------------------------------

// Typed access to manifest fields; every error names the manifest and the dotted field path.
class ManifestReader {
 public:
  explicit ManifestReader(std::string label) : label_(std::move(label)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError("capture " + label_ + ": field '" + field + "': " + what);
  }
  const json& member(const json& object, const std::string& key, const std::string& field) const {
    const auto it = object.find(key);
    if (it == object.end()) throw InputError("capture " + label_ + ": missing field '" + field + "'");
    return *it;
  }
  const json& object(const json& v, const std::string& field) const {
    if (!v.is_object()) fail(field, "expected an object, got " + describe(v));
    return v;
  }
  const json& array(const json& v, const std::string& field) const {
    if (!v.is_array()) fail(field, "expected an array, got " + describe(v));
    return v;
  }
  std::string string(const json& v, const std::string& field) const {
    if (!v.is_string()) fail(field, "expected a string, got " + describe(v));
    return v.get<std::string>();
  }
  int32_t int32(const json& v, const std::string& field) const {
    if (!v.is_number_integer()) fail(field, "expected an integer, got " + describe(v));
    const bool fits = v.is_number_unsigned()
                          ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max())
                          : v.get<int64_t>() >= std::numeric_limits<int32_t>::min() &&
                                v.get<int64_t>() <= std::numeric_limits<int32_t>::max();
    if (!fits) fail(field, "value " + v.dump() + " does not fit int32");
    return static_cast<int32_t>(v.get<int64_t>());
  }
  int32_t int32_in(const json& v, const std::string& field, int64_t min, int64_t max, const std::string& why) const {
    const int32_t value = int32(v, field);
    if (value < min || value > max) {
      fail(field, std::to_string(value) + " is outside [" + std::to_string(min) + ", " + std::to_string(max) + "]" +
                      (why.empty() ? "" : " (" + why + ")"));
    }
    return value;
  }
  // A file name inside the capture directory: no path separators, not "." or "..".
  std::string file_name(const json& v, const std::string& field) const {
    const std::string name = string(v, field);
    if (name.empty() || name == "." || name == ".." ||
        name.find_first_of(std::string("/\\\0", 3)) != std::string::npos) {
      fail(field, "\"" + printable(name, 80) + "\" is not a plain file name inside the capture directory");
    }
    return name;
  }

 private:
  // Never dumps a whole array or object (a deeply nested one would recurse for each level).
  static std::string describe(const json& v) {
    if (v.is_null()) return "null";
    if (v.is_array()) return "an array of " + std::to_string(v.size()) + " elements";
    if (v.is_object()) return "an object of " + std::to_string(v.size()) + " members";
    if (v.is_string()) return "string \"" + printable(v.get<std::string>(), 40) + "\"";
    return std::string(v.type_name()) + " " + v.dump();
  }

  std::string label_;
};

}  // namespace

const std::string& Manifest::file(const std::string& field) const {
  for (const auto& [key, name] : files)
    if (key == field) return name;
  throw std::logic_error("Manifest::file: unknown field " + field);
}

Manifest parse_manifest(const std::string& text, const std::string& label, const CaptureLimits& limits) {
  // nlohmann's lexer ends the input at a NUL byte, so "{...}\0garbage" would parse; JSON text
  // never holds a raw NUL (a string spells it \u0000).
  const size_t nul = text.find('\0');
  if (nul != std::string::npos) {
    throw InputError("capture " + label + ": invalid JSON: a NUL byte at offset " + std::to_string(nul));
  }
  json manifest;
  try {
    manifest = json::parse(text);  // strict: one value, then only whitespace
  } catch (const json::exception& e) {
    throw InputError("capture " + label + ": invalid JSON: " + e.what());
  }
  const ManifestReader m(label);
  m.object(manifest, "manifest");

  const std::string format = m.string(m.member(manifest, "format", "format"), "format");
  if (format != kFormat)
    m.fail("format", "expected \"" + std::string(kFormat) + "\", got \"" + printable(format, 60) + "\"");
  const int32_t version = m.int32(m.member(manifest, "version", "version"), "version");
  if (version < 1 || version > kVersion) {
    m.fail("version", "unsupported version " + std::to_string(version) + " (this build reads 1 to " +
                          std::to_string(kVersion) + ")");
  }

  Manifest out;
  out.version = version;
  ref::ModelSchedule& schedule = out.schedule;
  const ResourceLimits& res = limits.resources;
  const json& js = m.object(m.member(manifest, "schedule", "schedule"), "schedule");
  schedule.name = m.string(m.member(js, "name", "schedule.name"), "schedule.name");
  const json& ratios = m.array(m.member(js, "compress_ratios", "schedule.compress_ratios"), "schedule.compress_ratios");
  if (ratios.empty()) m.fail("schedule.compress_ratios", "empty: a step has at least one layer");
  if (ratios.size() > static_cast<size_t>(res.max_layers)) {
    m.fail("schedule.compress_ratios", std::to_string(ratios.size()) + " layers, above the limit of " +
                                           std::to_string(res.max_layers) + " (max_layers; DeepSeek-V4 has 43 or 61)");
  }
  for (size_t i = 0; i < ratios.size(); ++i) {
    const std::string field = "schedule.compress_ratios[" + std::to_string(i) + "]";
    const int32_t ratio = m.int32(ratios[i], field);
    if (ratio != 0 && ratio != 1 && ratio != 4 && ratio != 128) {
      m.fail(field, std::to_string(ratio) + " is not a DeepSeek-V4 layer kind (0 or 1: SWA-only, 4: C4A, 128: C128A)");
    }
    schedule.compress_ratios.push_back(ratio);
  }
  schedule.window = m.int32_in(m.member(js, "window", "schedule.window"), "schedule.window", 1, res.max_window,
                               "max_window, the models' maximum context");
  schedule.c4a_topk = m.int32_in(
      m.member(js, "c4a_topk", "schedule.c4a_topk"), "schedule.c4a_topk", 0, res.max_row_width - schedule.window,
      "W + c4a_topk must stay within max_row_width " + std::to_string(res.max_row_width) + " columns");
  schedule.main_block_size =
      m.int32(m.member(js, "main_block_size", "schedule.main_block_size"), "schedule.main_block_size");
  if (schedule.main_block_size < 128 || schedule.main_block_size % 128 != 0) {
    m.fail("schedule.main_block_size", std::to_string(schedule.main_block_size) +
                                           " is not a positive multiple of 128 (the C4A and C128A block sizes are "
                                           "main_block_size / 4 and / 128)");
  }

  const json& jstep = m.object(m.member(manifest, "step", "step"), "step");
  const auto step_int = [&](const char* key, int64_t min) {
    const std::string field = std::string("step.") + key;
    return m.int32_in(m.member(jstep, key, field), field, min, std::numeric_limits<int32_t>::max(), "");
  };
  out.num_decode_tokens = step_int("num_decode_tokens", 0);
  out.max_model_len = step_int("max_model_len", 1);
  out.swa_block_size = step_int("swa_block_size", 1);
  out.c4a_block_size = step_int("c4a_block_size", 1);
  out.c128a_block_size = step_int("c128a_block_size", 1);
  if (out.c4a_block_size != schedule.main_block_size / 4) {
    m.fail("step.c4a_block_size", std::to_string(out.c4a_block_size) + " is not schedule.main_block_size / 4 = " +
                                      std::to_string(schedule.main_block_size / 4) + " (SPEC §2)");
  }
  if (out.c128a_block_size != schedule.main_block_size / 128) {
    m.fail("step.c128a_block_size", std::to_string(out.c128a_block_size) + " is not schedule.main_block_size / 128 = " +
                                        std::to_string(schedule.main_block_size / 128) + " (SPEC §2)");
  }

  // Version 2 (SPEC §7): present only in version-2 manifests (a version-1 reader would ignore
  // them and replay another step).
  const auto v2 = [&](const json& object, const std::string& key, const std::string& field) -> const json* {
    const auto it = object.find(key);
    if (it == object.end()) return nullptr;
    if (version < 2) m.fail(field, "a version 2 field (SPEC §7) in a version " + std::to_string(version) + " manifest");
    return &*it;
  };
  for (const auto& [name, block_size, addressing] :
       {std::tuple<const char*, int32_t, Manifest::Addressing*>{"swa", out.swa_block_size, &out.swa},
        {"c4a", out.c4a_block_size, &out.c4a},
        {"c128a", out.c128a_block_size, &out.c128a}}) {
    const std::string prefix = std::string(name) + "_";
    const std::string span_field = "step." + prefix + "block_span", offset_field = "step." + prefix + "base_offset",
                      stride_field = "step." + prefix + "table_row_stride";
    if (const json* v = v2(jstep, prefix + "block_span", span_field)) {
      addressing->block_span = m.int32_in(*v, span_field, block_size, std::numeric_limits<int32_t>::max(),
                                          "a block span is at least step." + prefix + "block_size (SPEC §7)");
    }
    if (const json* v = v2(jstep, prefix + "base_offset", offset_field)) addressing->base_offset = m.int32(*v, offset_field);
    if (const json* v = v2(jstep, prefix + "table_row_stride", stride_field)) {
      addressing->table_row_stride = m.int32_in(*v, stride_field, 1, std::numeric_limits<int32_t>::max(), "");
    }
  }
  if (const json* je = v2(manifest, "engine", "engine")) {
    m.object(*je, "engine");
    Manifest::Engine e;
    const auto count = [&](const char* key) {
      const std::string field = std::string("engine.") + key;
      return m.int32_in(m.member(*je, key, field), field, 0, std::numeric_limits<int32_t>::max(), "");
    };
    e.num_tokens = count("num_tokens");
    e.num_requests = count("num_requests");
    e.decode_capacity = count("decode_capacity");
    e.prefill_capacity = count("prefill_capacity");
    e.c128a_capacity = count("c128a_capacity");
    if (je->contains("output_row_padding")) {
      e.output_row_padding = m.int32_in((*je)["output_row_padding"], "engine.output_row_padding", 0, 64, "");
      if (e.output_row_padding % 4 != 0) {
        m.fail("engine.output_row_padding", std::to_string(e.output_row_padding) +
                                                " is not a multiple of 4 (output rows stay 16-byte aligned)");
      }
    }
    out.engine = e;
  }

  const json& jfiles = m.object(m.member(manifest, "files", "files"), "files");
  for (const char* key : kStepFiles) {
    const std::string field = std::string("files.") + key;
    out.files.emplace_back(key, m.file_name(m.member(jfiles, key, field), field));
  }

  std::set<int32_t> seen;
  const json& jlayers = m.array(m.member(manifest, "c4a_layers", "c4a_layers"), "c4a_layers");
  for (size_t i = 0; i < jlayers.size(); ++i) {
    const std::string field = "c4a_layers[" + std::to_string(i) + "]";
    const json& entry = m.object(jlayers[i], field);
    const int32_t layer = m.int32(m.member(entry, "layer", field + ".layer"), field + ".layer");
    if (layer < 0 || layer >= schedule.num_layers()) {
      m.fail(field + ".layer",
             "layer " + std::to_string(layer) + " out of range [0, " + std::to_string(schedule.num_layers()) + ")");
    }
    if (!seen.insert(layer).second) m.fail(field + ".layer", "duplicate layer " + std::to_string(layer));
    const int32_t ratio = schedule.compress_ratios[static_cast<size_t>(layer)];
    if (ratio != 4) {
      m.fail(field + ".layer", "layer " + std::to_string(layer) + " is " +
                                   ref::layer_kind_name(ref::layer_kind_from_ratio(ratio)) +
                                   " (schedule.compress_ratios[" + std::to_string(layer) +
                                   "] = " + std::to_string(ratio) + "); only C4A layers have indexer output");
    }
    out.c4a_layers.push_back(
        {layer, m.file_name(m.member(entry, "decode_local", field + ".decode_local"), field + ".decode_local"),
         m.file_name(m.member(entry, "prefill_topk", field + ".prefill_topk"), field + ".prefill_topk"), field});
  }
  for (int32_t layer = 0; layer < schedule.num_layers(); ++layer) {
    if (schedule.compress_ratios[static_cast<size_t>(layer)] == 4 && seen.count(layer) == 0) {
      m.fail("c4a_layers", "C4A layer " + std::to_string(layer) + " (schedule.compress_ratios[" +
                               std::to_string(layer) + "] = 4) has no entry; every C4A layer needs its indexer output");
    }
  }
  return out;
}

namespace {

// ---- load: the arrays ---------------------------------------------------------------------

// Reads the .npy arrays named in the manifest, each error naming the file and its field;
// all of them together within the capture's byte budget.
class ArrayLoader {
 public:
  ArrayLoader(fs::path root, uint64_t max_bytes) : root_(std::move(root)), total_(max_bytes), left_(max_bytes) {}

  std::string label(const std::string& name, const std::string& field) const {
    return "capture " + printable((root_ / name).string()) + " (" + field + ")";
  }

  ref::IndexVector vector(const std::string& name, const std::string& field) {
    const std::string l = label(name, field);
    npy::Array<int32_t> a = npy::read_int32((root_ / name).string(), l, limit());
    spend(a.file_data_bytes);
    check_rank(a.shape, 1, l);
    return Eigen::Map<ref::IndexVector>(a.values.data(), static_cast<Eigen::Index>(a.shape[0]));
  }
  ref::IndexMatrix matrix(const std::string& name, const std::string& field) {
    const std::string l = label(name, field);
    npy::Array<int32_t> a = npy::read_int32((root_ / name).string(), l, limit());
    spend(a.file_data_bytes);
    check_rank(a.shape, 2, l);
    return Eigen::Map<ref::IndexMatrix>(a.values.data(), static_cast<Eigen::Index>(a.shape[0]),
                                        static_cast<Eigen::Index>(a.shape[1]));
  }
  std::vector<uint8_t> bytes(const std::string& name, const std::string& field) {
    const std::string l = label(name, field);
    npy::Array<uint8_t> a = npy::read_uint8((root_ / name).string(), l, limit());
    spend(a.file_data_bytes);
    check_rank(a.shape, 1, l);
    return std::move(a.values);
  }

 private:
  npy::ByteLimit limit() const {
    return {left_, "--max-capture-bytes: " + std::to_string(total_) + " for all .npy data of a capture, " +
                       std::to_string(left_) + " left for this file"};
  }
  void spend(uint64_t bytes) { left_ -= std::min(bytes, left_); }
  static void check_rank(const std::vector<int64_t>& shape, size_t rank, const std::string& label) {
    if (shape.size() != rank) {
      throw InputError(label + ": field 'shape': expected rank " + std::to_string(rank) + ", got rank " +
                       std::to_string(shape.size()));
    }
  }

  fs::path root_;
  uint64_t total_, left_;
};

// ---- load: the step's structure -----------------------------------------------------------

// Names where each of a step's values came from, for structural error messages.
class Sources {
 public:
  Sources(const fs::path& root, const Manifest& m) : root_(root), manifest_(m) {}

  std::string file(const std::string& field) const {
    return "capture " + printable((root_ / manifest_.file(field)).string()) + " (" + field + ")";
  }
  std::string manifest_field(const std::string& field) const {
    return "capture " + printable((root_ / kManifest).string()) + ": field '" + field + "'";
  }
  std::string layer_file(const Manifest::C4aLayer& l, bool prefill) const {
    const std::string& name = prefill ? l.prefill_topk : l.decode_local;
    return "capture " + printable((root_ / name).string()) + " (" + l.field +
           (prefill ? ".prefill_topk" : ".decode_local") + "), layer " + std::to_string(l.layer) + " (C4A)";
  }
  [[noreturn]] static void fail(const std::string& where, const std::string& what) {
    throw InputError(where + ": structural error: " + what);
  }

  // Where the reference's message about one layer's inputs points (its first word names the
  // field: "seq_lens[3] = ...", "compressed.block_table has ...", "prefill_topk has ...").
  std::string blame(const std::string& message, ref::LayerKind kind, const Manifest::C4aLayer* layer) const {
    const std::string word = message.substr(0, message.find_first_of("[ .="));
    const bool c4a = kind == ref::LayerKind::kC4A;
    if (word == "query_start_loc" || word == "seq_lens" || word == "token_to_req" || word == "decode_valid")
      return file(word);
    if (word == "T") return file("token_to_req");
    if (word == "R") return file("seq_lens");
    if (word == "swa")
      return message.rfind("swa.block_size", 0) == 0 ? manifest_field("step.swa_block_size") : file("swa_block_table");
    if (word == "compressed") {
      if (message.rfind("compressed.block_size", 0) == 0)
        return manifest_field(c4a ? "step.c4a_block_size" : "step.c128a_block_size");
      return file(c4a ? "c4a_block_table" : "c128a_block_table");
    }
    if ((word == "prefill_topk" || word == "Kp") && layer) return layer_file(*layer, true);
    if ((word == "decode_compressed" || word == "Kd") && layer) return layer_file(*layer, false);
    if (word == "window") return manifest_field("schedule.window");
    if (word == "topk") return manifest_field("schedule.c4a_topk");
    if (word == "max_model_len") return manifest_field("step.max_model_len");
    if (word == "D" || word == "num_decode_tokens" || word == "decode_swa_indices")
      return manifest_field("step.num_decode_tokens");
    return "capture " + printable((root_ / kManifest).string());
  }

 private:
  fs::path root_;
  const Manifest& manifest_;
};

std::string count_of(const char* what, Eigen::Index n, const std::string& source) {
  return std::string(what) + " = " + std::to_string(n) + " (the length of " + source + ")";
}

// SPEC §4 step-level checks, each error naming its file and row; those the reference owns
// (value checks within query_start_loc, token_to_req, seq_lens) are its own messages with
// the file put in front.
void check_step_structure(const ref::Step& step, const Manifest& m, const Sources& src) {
  const Eigen::Index R = step.seq_lens.size(), T = step.token_to_req.size();
  const std::string r_is = count_of("R", R, m.file("seq_lens"));
  if (step.query_start_loc.size() != R + 1) {
    Sources::fail(src.file("query_start_loc"), "has " + std::to_string(step.query_start_loc.size()) +
                                                   " entries, expected R + 1 = " + std::to_string(R + 1) + " (" + r_is +
                                                   ")");
  }
  if (step.query_start_loc(0) == 0 && step.query_start_loc(R) != T) {
    Sources::fail(src.file("token_to_req"), "has " + std::to_string(T) + " entries, but query_start_loc[" +
                                                std::to_string(R) + "] = " + std::to_string(step.query_start_loc(R)) +
                                                " in " + m.file("query_start_loc") +
                                                " says the step has that many tokens (one entry per token)");
  }
  try {
    ref::validate_step_structure(step.query_start_loc, step.seq_lens, step.token_to_req);
  } catch (const std::invalid_argument& e) {
    Sources::fail(src.blame(e.what(), ref::LayerKind::kSwaOnly, nullptr), e.what());
  }
  try {
    ref::validate_decode_boundary(step.query_start_loc, step.num_decode_tokens, "num_decode_tokens");
  } catch (const std::invalid_argument& e) {
    Sources::fail(src.manifest_field("step.num_decode_tokens"),
                  std::string(e.what()) + " (" + count_of("T", T, m.file("token_to_req")) + ")");
  }
  const auto D = static_cast<size_t>(step.num_decode_tokens);
  if (!step.decode_valid.empty() && step.decode_valid.size() != D) {
    Sources::fail(src.file("decode_valid"), "has " + std::to_string(step.decode_valid.size()) +
                                                " entries, expected step.num_decode_tokens = " + std::to_string(D) +
                                                " (or none: all valid)");
  }
  for (const auto& [field, cache] : {std::pair<const char*, const ref::PagedCache*>{"swa_block_table", &step.swa},
                                     {"c4a_block_table", &step.c4a},
                                     {"c128a_block_table", &step.c128a}}) {
    // Version 2: a persistent table may hold more rows (SPEC §7), R_cap at least with "engine".
    const Eigen::Index rows = cache->block_table.rows();
    if (m.version < 2 ? rows != R : rows < R) {
      Sources::fail(src.file(field), "has " + std::to_string(rows) + " rows, expected one per request" +
                                         (m.version < 2 ? "" : " or more") + ": " + r_is);
    }
  }
  const int64_t capacity = step.swa.row_capacity();
  for (Eigen::Index r = 0; r < R; ++r) {
    if (step.seq_lens(r) > capacity) {
      Sources::fail(src.file("seq_lens"), "seq_lens[" + std::to_string(r) + "] = " + std::to_string(step.seq_lens(r)) +
                                              ": above the " + std::to_string(capacity) + " tokens its row of " +
                                              m.file("swa_block_table") + " can hold (" +
                                              std::to_string(step.swa.block_table.cols()) + " blocks of " +
                                              std::to_string(step.swa.block_size) + ")");
    }
  }
}

// Version 2 with "engine": checks the run-time sizes against the capacities the files give,
// cuts `step`'s per-request and per-token arrays to the live step, and returns the buffers as
// they were (C4A files come later).
PersistentStep take_persistent(ref::Step& step, const Manifest& m, const Sources& src) {
  const Manifest::Engine& e = *m.engine;
  const Eigen::Index R_cap = step.seq_lens.size(), T_cap = step.token_to_req.size();
  const int32_t R = e.num_requests, T = e.num_tokens, D = step.num_decode_tokens;
  const auto above = [&](const char* field, int64_t value, const std::string& capacity) {
    Sources::fail(src.manifest_field(field), std::to_string(value) + " is above " + capacity);
  };
  if (R > R_cap) above("engine.num_requests", R, count_of("R_cap", R_cap, m.file("seq_lens")));
  if (step.query_start_loc.size() != R_cap + 1) {
    Sources::fail(src.file("query_start_loc"), "has " + std::to_string(step.query_start_loc.size()) +
                                                   " entries, expected R_cap + 1 = " + std::to_string(R_cap + 1) + " (" +
                                                   count_of("R_cap", R_cap, m.file("seq_lens")) + ")");
  }
  if (T > T_cap) above("engine.num_tokens", T, count_of("T_cap", T_cap, m.file("token_to_req")));
  if (e.decode_capacity > T_cap) above("engine.decode_capacity", e.decode_capacity, count_of("T_cap", T_cap, m.file("token_to_req")));
  if (D > e.decode_capacity) above("step.num_decode_tokens", D, "engine.decode_capacity = " + std::to_string(e.decode_capacity));
  if (!step.decode_valid.empty() && step.decode_valid.size() != static_cast<size_t>(e.decode_capacity)) {
    Sources::fail(src.file("decode_valid"), "has " + std::to_string(step.decode_valid.size()) +
                                                " entries, expected engine.decode_capacity = " +
                                                std::to_string(e.decode_capacity) + " (or none: all valid)");
  }
  if (step.query_start_loc(0) == 0 && step.query_start_loc(R) != T) {
    Sources::fail(src.file("query_start_loc"), "query_start_loc[" + std::to_string(R) + "] = " +
                                                   std::to_string(step.query_start_loc(R)) +
                                                   ": the step's tokens end there, but engine.num_tokens = " +
                                                   std::to_string(T));
  }
  PersistentStep p;
  p.sizes = ref::RunTimeSizes{T, D, R};
  p.query_start_loc = step.query_start_loc;
  p.seq_lens = step.seq_lens;
  p.token_to_req = step.token_to_req;
  p.decode_valid = step.decode_valid;
  p.c4a_per_layer.resize(m.schedule.compress_ratios.size());
  p.decode_capacity = e.decode_capacity;
  p.prefill_capacity = e.prefill_capacity;
  p.c128a_capacity = e.c128a_capacity;
  p.output_row_padding = e.output_row_padding;
  step.query_start_loc = ref::IndexVector(step.query_start_loc.head(R + 1));
  step.seq_lens = ref::IndexVector(step.seq_lens.head(R));
  step.token_to_req = ref::IndexVector(step.token_to_req.head(T));
  if (!step.decode_valid.empty()) step.decode_valid.resize(static_cast<size_t>(D));
  return p;
}

// The strided image of a block table (rows x row_stride int32, SPEC §7) against its columns and
// the capture's byte budget.
void check_row_stride(const ref::PagedCache& cache, int32_t stride, const char* field, const char* file,
                      const CaptureLimits& limits, const Sources& src) {
  if (stride == 0) return;
  const Eigen::Index NB = cache.block_table.cols();
  const std::string where = src.manifest_field(std::string("step.") + field);
  if (stride < NB) {
    Sources::fail(where, std::to_string(stride) + " is below the " + std::to_string(NB) + " columns of " + src.file(file));
  }
  const uint64_t bytes = static_cast<uint64_t>(cache.block_table.rows()) * static_cast<uint64_t>(stride) * 4;
  if (bytes > limits.max_capture_bytes) {
    Sources::fail(where, "the table's " + std::to_string(cache.block_table.rows()) + " rows of " + std::to_string(stride) +
                             " int32 take " + format_bytes(bytes) + ", above the limit of " +
                             format_bytes(limits.max_capture_bytes) + " (--max-capture-bytes)");
  }
}

// Persistent buffers a capture can hold: the live step at their head, its sizes theirs (a
// capture of broken metadata would load as another step, or not at all).
void check_persistent_head(const PersistentStep& p, const Capture& c) {
  const ref::Step& s = c.step;
  const int32_t T = s.num_tokens(), D = s.num_decode_tokens, R = s.num_requests();
  const auto reject = [](const std::string& what) {
    throw std::invalid_argument("save_capture: the persistent buffers' " + what + " (the live step is their head)");
  };
  if (p.sizes.num_tokens != T || p.sizes.num_decode_tokens != D || p.sizes.num_requests != R) {
    reject("run-time sizes are not the step's T, D and R");
  }
  if (p.token_capacity() < T || p.request_capacity() < R || p.decode_capacity < D || p.decode_capacity > p.token_capacity() ||
      p.prefill_capacity < T - D || static_cast<int32_t>(p.query_start_loc.size()) != p.request_capacity() + 1) {
    reject("capacities do not hold the step");
  }
  if (p.query_start_loc.head(R + 1) != s.query_start_loc || p.seq_lens.head(R) != s.seq_lens ||
      p.token_to_req.head(T) != s.token_to_req) {
    reject("query_start_loc, seq_lens or token_to_req differ from the step's");
  }
  if (!p.decode_valid.empty()) {
    if (p.decode_valid.size() != static_cast<size_t>(p.decode_capacity)) reject("decode_valid is not D_cap long");
    for (int32_t t = 0; t < D; ++t) {
      const uint8_t live = s.decode_valid.empty() ? 1 : s.decode_valid[static_cast<size_t>(t)];
      if ((p.decode_valid[static_cast<size_t>(t)] != 0) != (live != 0)) reject("decode_valid differs from the step's");
    }
  }
  if (p.c4a_per_layer.size() != c.c4a_per_layer.size()) reject("C4A layers are not the step's");
  for (size_t l = 0; l < p.c4a_per_layer.size(); ++l) {
    if (c.schedule.compress_ratios[l] != 4) continue;
    const ref::C4aIndexerOutput &buffers = p.c4a_per_layer[l], &live = c.c4a_per_layer[l];
    if (buffers.decode_local.rows() != p.decode_capacity || buffers.prefill_topk.rows() != p.prefill_capacity ||
        buffers.decode_local.cols() != live.decode_local.cols() || buffers.prefill_topk.cols() != live.prefill_topk.cols() ||
        buffers.decode_local.topRows(D) != live.decode_local || buffers.prefill_topk.topRows(T - D) != live.prefill_topk) {
      reject("C4A layer " + std::to_string(l) + " differs from the step's");
    }
  }
}

}  // namespace

StepCase step_case(Capture capture) {
  StepCase c;
  const auto padding = [](int32_t stride, const ref::PagedCache& cache) {
    return TableLayout{stride == 0 ? 0 : stride - static_cast<int32_t>(cache.block_table.cols()), 0};
  };
  c.layout.swa_table = padding(capture.swa_table_row_stride, capture.step.swa);
  c.layout.c4a_table = padding(capture.c4a_table_row_stride, capture.step.c4a);
  c.layout.c128a_table = padding(capture.c128a_table_row_stride, capture.step.c128a);
  c.step = std::move(capture.step);
  c.schedule = std::move(capture.schedule);
  c.c4a_per_layer = std::move(capture.c4a_per_layer);
  c.persistent = std::move(capture.persistent);
  return c;
}

Capture to_capture(const StepCase& c) {
  Capture capture;
  capture.step = c.step;
  capture.schedule = c.schedule;
  capture.c4a_per_layer = c.c4a_per_layer;
  const auto stride = [](const TableLayout& t, const ref::PagedCache& cache) {
    return t.row_padding == 0 ? 0 : static_cast<int32_t>(cache.block_table.cols()) + t.row_padding;
  };
  capture.swa_table_row_stride = stride(c.layout.swa_table, c.step.swa);
  capture.c4a_table_row_stride = stride(c.layout.c4a_table, c.step.c4a);
  capture.c128a_table_row_stride = stride(c.layout.c128a_table, c.step.c128a);
  capture.persistent = c.persistent;
  return capture;
}

void save_capture(const Capture& capture, const std::string& dir) {
  const ref::ModelSchedule& schedule = capture.schedule;
  const ref::Step& step = capture.step;
  if (capture.c4a_per_layer.size() != schedule.compress_ratios.size()) {
    throw std::invalid_argument("save_capture: c4a_per_layer has " + std::to_string(capture.c4a_per_layer.size()) +
                                " entries, schedule '" + schedule.name + "' has " +
                                std::to_string(schedule.compress_ratios.size()) + " layers");
  }
  const std::optional<PersistentStep>& persistent = capture.persistent;
  if (persistent) check_persistent_head(*persistent, capture);
  const std::pair<int32_t, const ref::PagedCache*> strides[] = {
      {capture.swa_table_row_stride, &step.swa}, {capture.c4a_table_row_stride, &step.c4a},
      {capture.c128a_table_row_stride, &step.c128a}};
  bool v2 = persistent.has_value();
  for (const auto& [stride, cache] : strides) {
    if (stride != 0 && stride < cache->block_table.cols()) {
      throw std::invalid_argument("save_capture: a table row stride of " + std::to_string(stride) + " is below its " +
                                  std::to_string(cache->block_table.cols()) + " columns");
    }
    v2 |= stride != 0 || cache->block_span || cache->base_offset != 0 || cache->block_table.rows() != step.num_requests();
  }
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec || !fs::is_directory(root, ec)) {
    throw std::runtime_error("capture " + dir + ": cannot create directory" + (ec ? ": " + ec.message() : ""));
  }
  const auto put = [&root](const std::string& name, const std::vector<uint8_t>& bytes) {
    npy::write_file((root / name).string(), bytes);
    return name;
  };

  // With persistent buffers the files are those buffers (the live step is their head).
  const ref::IndexVector& query_start_loc = persistent ? persistent->query_start_loc : step.query_start_loc;
  const ref::IndexVector& seq_lens = persistent ? persistent->seq_lens : step.seq_lens;
  const ref::IndexVector& token_to_req = persistent ? persistent->token_to_req : step.token_to_req;
  const std::vector<uint8_t>& decode_valid = persistent ? persistent->decode_valid : step.decode_valid;
  const std::vector<ref::C4aIndexerOutput>& c4a = persistent ? persistent->c4a_per_layer : capture.c4a_per_layer;
  nlohmann::ordered_json files;
  files["query_start_loc"] = put("query_start_loc.npy", encode(query_start_loc));
  files["seq_lens"] = put("seq_lens.npy", encode(seq_lens));
  files["token_to_req"] = put("token_to_req.npy", encode(token_to_req));
  files["decode_valid"] =
      put("decode_valid.npy", npy::encode_uint8({static_cast<int64_t>(decode_valid.size())}, decode_valid.data()));
  files["swa_block_table"] = put("swa_block_table.npy", encode(step.swa.block_table));
  files["c4a_block_table"] = put("c4a_block_table.npy", encode(step.c4a.block_table));
  files["c128a_block_table"] = put("c128a_block_table.npy", encode(step.c128a.block_table));

  // Every C4A layer has an entry (its matrices may be empty); other layers have none.
  nlohmann::ordered_json c4a_layers = nlohmann::ordered_json::array();
  for (int32_t layer = 0; layer < schedule.num_layers(); ++layer) {
    const ref::C4aIndexerOutput& out = capture.c4a_per_layer[static_cast<size_t>(layer)];
    const int32_t ratio = schedule.compress_ratios[static_cast<size_t>(layer)];
    if (ref::layer_kind_from_ratio(ratio) != ref::LayerKind::kC4A) {
      if (has_indexer_output(out)) {
        throw std::invalid_argument("save_capture: layer " + std::to_string(layer) + " has compress ratio " +
                                    std::to_string(ratio) + " but C4A indexer output (only C4A layers have one)");
      }
      continue;
    }
    nlohmann::ordered_json entry;
    entry["layer"] = layer;
    const ref::C4aIndexerOutput& buffers = c4a[static_cast<size_t>(layer)];
    entry["decode_local"] = put(layer_file(layer, "decode_local"), encode(buffers.decode_local));
    entry["prefill_topk"] = put(layer_file(layer, "prefill_topk"), encode(buffers.prefill_topk));
    c4a_layers.push_back(entry);
  }

  nlohmann::ordered_json manifest;
  manifest["format"] = kFormat;
  manifest["version"] = v2 ? 2 : 1;  // version 1 readers keep reading what they can
  manifest["schedule"] = {{"name", schedule.name},
                          {"compress_ratios", schedule.compress_ratios},
                          {"window", schedule.window},
                          {"c4a_topk", schedule.c4a_topk},
                          {"main_block_size", schedule.main_block_size}};
  manifest["step"] = {{"num_decode_tokens", step.num_decode_tokens},
                      {"max_model_len", step.max_model_len},
                      {"swa_block_size", step.swa.block_size},
                      {"c4a_block_size", step.c4a.block_size},
                      {"c128a_block_size", step.c128a.block_size}};
  for (const auto& [name, cache, stride] :
       {std::tuple<const char*, const ref::PagedCache*, int32_t>{"swa", &step.swa, capture.swa_table_row_stride},
        {"c4a", &step.c4a, capture.c4a_table_row_stride},
        {"c128a", &step.c128a, capture.c128a_table_row_stride}}) {
    const std::string prefix = name;
    if (cache->block_span) manifest["step"][prefix + "_block_span"] = *cache->block_span;
    if (cache->base_offset != 0) manifest["step"][prefix + "_base_offset"] = cache->base_offset;
    if (stride != 0) manifest["step"][prefix + "_table_row_stride"] = stride;
  }
  manifest["files"] = files;
  manifest["c4a_layers"] = c4a_layers;
  if (persistent) {
    manifest["engine"] = {{"num_tokens", persistent->sizes.num_tokens},
                          {"num_requests", persistent->sizes.num_requests},
                          {"decode_capacity", persistent->decode_capacity},
                          {"prefill_capacity", persistent->prefill_capacity},
                          {"c128a_capacity", persistent->c128a_capacity},
                          {"output_row_padding", persistent->output_row_padding}};
  }
  const std::string text = manifest.dump(2) + "\n";
  // Written last, so the manifest only names files that exist.
  npy::write_file((root / kManifest).string(), std::vector<uint8_t>(text.begin(), text.end()));
}

Capture load_capture(const std::string& dir, const CaptureLimits& limits) {
  const fs::path root(dir);
  const fs::path manifest_path = root / kManifest;
  const std::string manifest_label = printable(manifest_path.string());
  std::string text;
  {
    std::error_code ec;
    if (!fs::exists(manifest_path, ec)) {
      throw InputError("capture " + manifest_label + ": file not found (not a capture directory?)");
    }
    text = read_text_file(manifest_path.string(), "capture " + manifest_label, kMaxManifestBytes);
    if (text.empty()) throw InputError("capture " + manifest_label + ": the file is empty");
  }
  const Manifest m = parse_manifest(text, manifest_label, limits);
  const Sources src(root, m);

  Capture capture;
  capture.schedule = m.schedule;
  ref::Step& step = capture.step;
  step.num_decode_tokens = m.num_decode_tokens;
  step.max_model_len = m.max_model_len;
  step.swa.block_size = m.swa_block_size;
  step.c4a.block_size = m.c4a_block_size;
  step.c128a.block_size = m.c128a_block_size;

  ArrayLoader npy_files(root, limits.max_capture_bytes);
  step.query_start_loc = npy_files.vector(m.file("query_start_loc"), "query_start_loc");
  step.seq_lens = npy_files.vector(m.file("seq_lens"), "seq_lens");
  step.token_to_req = npy_files.vector(m.file("token_to_req"), "token_to_req");
  step.decode_valid = npy_files.bytes(m.file("decode_valid"), "decode_valid");
  step.swa.block_table = npy_files.matrix(m.file("swa_block_table"), "swa_block_table");
  step.c4a.block_table = npy_files.matrix(m.file("c4a_block_table"), "c4a_block_table");
  step.c128a.block_table = npy_files.matrix(m.file("c128a_block_table"), "c128a_block_table");
  for (const auto& [cache, addressing] : {std::pair<ref::PagedCache*, const Manifest::Addressing*>{&step.swa, &m.swa},
                                          {&step.c4a, &m.c4a},
                                          {&step.c128a, &m.c128a}}) {
    cache->block_span = addressing->block_span;
    cache->base_offset = addressing->base_offset;
  }
  std::optional<PersistentStep>& persistent = capture.persistent;
  if (m.engine) persistent = take_persistent(step, m, src);
  check_step_structure(step, m, src);
  if (persistent) {
    const Eigen::Index R_cap = persistent->request_capacity();
    for (const auto& [field, cache] : {std::pair<const char*, const ref::PagedCache*>{"swa_block_table", &step.swa},
                                       {"c4a_block_table", &step.c4a},
                                       {"c128a_block_table", &step.c128a}}) {
      if (cache->block_table.rows() < R_cap) {
        Sources::fail(src.file(field), "has " + std::to_string(cache->block_table.rows()) + " rows, fewer than " +
                                           count_of("R_cap", R_cap, m.file("seq_lens")));
      }
    }
    if (step.num_tokens() - step.num_decode_tokens > persistent->prefill_capacity) {
      Sources::fail(src.manifest_field("engine.prefill_capacity"),
                    std::to_string(persistent->prefill_capacity) + " is below T - D = " +
                        std::to_string(step.num_tokens() - step.num_decode_tokens));
    }
  }
  check_row_stride(step.swa, m.swa.table_row_stride, "swa_table_row_stride", "swa_block_table", limits, src);
  check_row_stride(step.c4a, m.c4a.table_row_stride, "c4a_table_row_stride", "c4a_block_table", limits, src);
  check_row_stride(step.c128a, m.c128a.table_row_stride, "c128a_table_row_stride", "c128a_block_table", limits, src);
  capture.swa_table_row_stride = m.swa.table_row_stride;
  capture.c4a_table_row_stride = m.c4a.table_row_stride;
  capture.c128a_table_row_stride = m.c128a.table_row_stride;

  capture.c4a_per_layer.resize(capture.schedule.compress_ratios.size());
  const Eigen::Index D = step.num_decode_tokens;
  const Eigen::Index prefill_tokens = step.token_to_req.size() - D;  // >= 0: D <= T was checked
  for (const Manifest::C4aLayer& l : m.c4a_layers) {
    ref::C4aIndexerOutput& out = capture.c4a_per_layer[static_cast<size_t>(l.layer)];
    for (const bool prefill : {false, true}) {
      ref::IndexMatrix& matrix = prefill ? out.prefill_topk : out.decode_local;
      matrix = npy_files.matrix(
          prefill ? l.prefill_topk : l.decode_local,
          l.field + (prefill ? ".prefill_topk" : ".decode_local") + " of layer " + std::to_string(l.layer));
      // Persistent buffers: the capacities' rows, the live step's at their head.
      const Eigen::Index rows = !persistent ? (prefill ? prefill_tokens : D)
                                            : (prefill ? persistent->prefill_capacity : persistent->decode_capacity);
      if (matrix.rows() != rows) {
        throw InputError(src.layer_file(l, prefill) + ": field 'shape': expected " + std::to_string(rows) + " rows (" +
                         (persistent ? (prefill ? "engine.prefill_capacity" : "engine.decode_capacity, D_cap")
                                     : (prefill ? "the tokens after the decode tokens, T - D" : "step.num_decode_tokens, D")) +
                         "), got " + std::to_string(matrix.rows()));
      }
      if (persistent) {
        (prefill ? persistent->c4a_per_layer[static_cast<size_t>(l.layer)].prefill_topk
                 : persistent->c4a_per_layer[static_cast<size_t>(l.layer)].decode_local) = matrix;
        matrix = ref::IndexMatrix(matrix.topRows(prefill ? prefill_tokens : D));
      }
    }
  }

  const std::string where = "capture " + printable(dir);
  check_step_resources(step, capture.schedule, capture.c4a_per_layer, limits.resources, where);
  if (persistent) {
    if (capture.schedule.count(ref::LayerKind::kC128A) > 0) {
      const int32_t E = c128a_effective_width(step);
      if (persistent->c128a_capacity < E) {
        Sources::fail(src.manifest_field("engine.c128a_capacity"),
                      std::to_string(persistent->c128a_capacity) + " is below the C128A effective width E = " +
                          std::to_string(E) + " of this step (SPEC §6; C128A layers are recorded with topk = P_cap)");
      }
    }
    check_persistent_resources(*persistent, capture.schedule, limits.resources, where);
  }

  // The reference's own checks on the builder inputs of one layer of each kind: all
  // SWA-only layers of a step get the same inputs, and so do all C128A layers; C4A layers
  // differ only in their two files, whose shapes were checked above.
  bool checked[3] = {false, false, false};
  for (int32_t layer = 0; layer < capture.schedule.num_layers(); ++layer) {
    const ref::LayerKind kind =
        ref::layer_kind_from_ratio(capture.schedule.compress_ratios[static_cast<size_t>(layer)]);
    if (checked[static_cast<int>(kind)]) continue;
    checked[static_cast<int>(kind)] = true;
    const Manifest::C4aLayer* files = nullptr;
    for (const Manifest::C4aLayer& l : m.c4a_layers)
      if (l.layer == layer) files = &l;
    try {
      ref::validate_builder_inputs(
          ref::layer_builder_inputs(step, capture.schedule, layer, &capture.c4a_per_layer[static_cast<size_t>(layer)]));
    } catch (const std::invalid_argument& e) {
      Sources::fail(src.blame(e.what(), kind, files) + ", layer " + std::to_string(layer) + " (" +
                        ref::layer_kind_name(kind) + ")",
                    e.what());
    }
  }
  return capture;
}

}  // namespace dsv4::harness
