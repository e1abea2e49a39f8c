// Step capture format, version 1: one engine step as a directory that a Python engine can
// write with numpy.save and json.dump, and `dsv4 replay DIR` can check.
//
//   DIR/manifest.json
//     {"format": "dsv4-step-capture", "version": 1,
//      "schedule": {"name": str, "compress_ratios": [int, ...], "window": int,
//                   "c4a_topk": int, "main_block_size": int},
//      "step": {"num_decode_tokens": int, "max_model_len": int, "swa_block_size": int,
//               "c4a_block_size": int, "c128a_block_size": int},
//      "files": {"query_start_loc": name, "seq_lens": name, "token_to_req": name,
//                "decode_valid": name, "swa_block_table": name, "c4a_block_table": name,
//                "c128a_block_table": name},
//      "c4a_layers": [{"layer": int, "decode_local": name, "prefill_topk": name}, ...]}
//   DIR/<name>.npy, C order, int32 ('<i4'; '<i8' accepted and narrowed) unless said:
//     query_start_loc (R+1), seq_lens (R), token_to_req (T),
//     decode_valid (D or 0 = all valid) uint8 '|u1' or bool '|b1',
//     swa_block_table (R x NBs), c4a_block_table (R x NB4), c128a_block_table (R x NB128),
//     per C4A layer: decode_local (D x K) and prefill_topk ((T-D) x K), the indexer's local
//     compressed indices, -1 padded. K may be smaller than c4a_topk (the builder pads with -1).
//   Layers not listed in c4a_layers get empty indexer outputs. File names are plain names
//   inside DIR. Unknown JSON keys are ignored. Integers must fit int32.
//
// Loading checks syntax, types and ranks (and that the C4A rows match D and T-D), not the
// step's structure: the builders reject a structurally bad step with std::invalid_argument.
#include "harness/capture.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "harness/npy.h"

namespace dsv4::harness {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kFormat = "dsv4-step-capture";
constexpr int kVersion = 1;
constexpr const char* kManifest = "manifest.json";

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

// ---- load ---------------------------------------------------------------------------------

// Typed access to manifest fields; every error names the manifest and the dotted field path.
class ManifestReader {
 public:
  explicit ManifestReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw std::runtime_error("capture " + path_ + ": field '" + field + "': " + what);
  }
  const json& member(const json& object, const std::string& key, const std::string& field) const {
    const auto it = object.find(key);
    if (it == object.end()) throw std::runtime_error("capture " + path_ + ": missing field '" + field + "'");
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
  // A file name inside the capture directory: no path separators, not "." or "..".
  std::string file_name(const json& v, const std::string& field) const {
    const std::string name = string(v, field);
    if (name.empty() || name == "." || name == ".." || name.find_first_of(std::string("/\\\0", 3)) != std::string::npos) {
      fail(field, "'" + name + "' is not a plain file name inside the capture directory");
    }
    return name;
  }

  int32_t int32_at(const json& object, const std::string& key, const std::string& parent) const {
    return int32(member(object, key, parent + "." + key), parent + "." + key);
  }

 private:
  static std::string describe(const json& v) {
    if (v.is_null()) return "null";
    std::string text = v.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return std::string(v.type_name()) + " " + text;
  }

  std::string path_;
};

json read_manifest(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw std::runtime_error("capture " + path.string() + ": file not found (not a capture directory?)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("capture " + path.string() + ": cannot open file");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw std::runtime_error("capture " + path.string() + ": invalid JSON: " + e.what());
  }
}

// Reads the .npy arrays named in the manifest, each error naming the file and its field.
class ArrayLoader {
 public:
  explicit ArrayLoader(fs::path root) : root_(std::move(root)) {}

  ref::IndexVector vector(const std::string& name, const std::string& field) const {
    const std::string label = label_of(name, field);
    npy::Array<int32_t> a = npy::read_int32((root_ / name).string(), label);
    check_rank(a.shape, 1, label);
    return Eigen::Map<ref::IndexVector>(a.values.data(), static_cast<Eigen::Index>(a.shape[0]));
  }
  ref::IndexMatrix matrix(const std::string& name, const std::string& field) const {
    const std::string label = label_of(name, field);
    npy::Array<int32_t> a = npy::read_int32((root_ / name).string(), label);
    check_rank(a.shape, 2, label);
    return Eigen::Map<ref::IndexMatrix>(a.values.data(), static_cast<Eigen::Index>(a.shape[0]),
                                        static_cast<Eigen::Index>(a.shape[1]));
  }
  std::vector<uint8_t> bytes(const std::string& name, const std::string& field) const {
    const std::string label = label_of(name, field);
    npy::Array<uint8_t> a = npy::read_uint8((root_ / name).string(), label);
    check_rank(a.shape, 1, label);
    return std::move(a.values);
  }
  // A C4A matrix must have as many rows as the step implies.
  void check_rows(const ref::IndexMatrix& m, Eigen::Index rows, const std::string& name,
                  const std::string& field, const std::string& why) const {
    if (m.rows() != rows) {
      throw std::runtime_error(label_of(name, field) + ": field 'shape': expected " + std::to_string(rows) +
                               " rows (" + why + "), got " + std::to_string(m.rows()));
    }
  }

 private:
  std::string label_of(const std::string& name, const std::string& field) const {
    return "capture " + (root_ / name).string() + " (" + field + ")";
  }
  static void check_rank(const std::vector<int64_t>& shape, size_t rank, const std::string& label) {
    if (shape.size() != rank) {
      throw std::runtime_error(label + ": field 'shape': expected rank " + std::to_string(rank) +
                               ", got rank " + std::to_string(shape.size()));
    }
  }

  fs::path root_;
};

}  // namespace

void save_capture(const Capture& capture, const std::string& dir) {
  const ref::ModelSchedule& schedule = capture.schedule;
  const ref::Step& step = capture.step;
  if (capture.c4a_per_layer.size() != schedule.compress_ratios.size()) {
    throw std::invalid_argument("save_capture: c4a_per_layer has " + std::to_string(capture.c4a_per_layer.size()) +
                                " entries, schedule '" + schedule.name + "' has " +
                                std::to_string(schedule.compress_ratios.size()) + " layers");
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

  nlohmann::ordered_json files;
  files["query_start_loc"] = put("query_start_loc.npy", encode(step.query_start_loc));
  files["seq_lens"] = put("seq_lens.npy", encode(step.seq_lens));
  files["token_to_req"] = put("token_to_req.npy", encode(step.token_to_req));
  files["decode_valid"] = put("decode_valid.npy", npy::encode_uint8({static_cast<int64_t>(step.decode_valid.size())},
                                                                     step.decode_valid.data()));
  files["swa_block_table"] = put("swa_block_table.npy", encode(step.swa.block_table));
  files["c4a_block_table"] = put("c4a_block_table.npy", encode(step.c4a.block_table));
  files["c128a_block_table"] = put("c128a_block_table.npy", encode(step.c128a.block_table));

  // Layers without indexer output (non-C4A) are left out; loading gives them empty ones.
  nlohmann::ordered_json c4a_layers = nlohmann::ordered_json::array();
  for (int32_t layer = 0; layer < schedule.num_layers(); ++layer) {
    const ref::C4aIndexerOutput& out = capture.c4a_per_layer[static_cast<size_t>(layer)];
    if (!has_indexer_output(out)) continue;
    nlohmann::ordered_json entry;
    entry["layer"] = layer;
    entry["decode_local"] = put(layer_file(layer, "decode_local"), encode(out.decode_local));
    entry["prefill_topk"] = put(layer_file(layer, "prefill_topk"), encode(out.prefill_topk));
    c4a_layers.push_back(entry);
  }

  nlohmann::ordered_json manifest;
  manifest["format"] = kFormat;
  manifest["version"] = kVersion;
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
  manifest["files"] = files;
  manifest["c4a_layers"] = c4a_layers;
  const std::string text = manifest.dump(2) + "\n";
  // Written last, so the manifest only names files that exist.
  npy::write_file((root / kManifest).string(), std::vector<uint8_t>(text.begin(), text.end()));
}

Capture load_capture(const std::string& dir) {
  const fs::path root(dir);
  const fs::path manifest_path = root / kManifest;
  const json manifest = read_manifest(manifest_path);
  const ManifestReader m(manifest_path.string());
  m.object(manifest, "manifest");

  const std::string format = m.string(m.member(manifest, "format", "format"), "format");
  if (format != kFormat) m.fail("format", "expected \"" + std::string(kFormat) + "\", got \"" + format + "\"");
  const int32_t version = m.int32(m.member(manifest, "version", "version"), "version");
  if (version != kVersion) {
    m.fail("version", "unsupported version " + std::to_string(version) + " (this build reads " +
                          std::to_string(kVersion) + ")");
  }

  Capture capture;
  ref::ModelSchedule& schedule = capture.schedule;
  const json& js = m.object(m.member(manifest, "schedule", "schedule"), "schedule");
  schedule.name = m.string(m.member(js, "name", "schedule.name"), "schedule.name");
  const json& ratios = m.array(m.member(js, "compress_ratios", "schedule.compress_ratios"), "schedule.compress_ratios");
  for (size_t i = 0; i < ratios.size(); ++i) {
    schedule.compress_ratios.push_back(m.int32(ratios[i], "schedule.compress_ratios[" + std::to_string(i) + "]"));
  }
  schedule.window = m.int32_at(js, "window", "schedule");
  schedule.c4a_topk = m.int32_at(js, "c4a_topk", "schedule");
  schedule.main_block_size = m.int32_at(js, "main_block_size", "schedule");

  ref::Step& step = capture.step;
  const json& jstep = m.object(m.member(manifest, "step", "step"), "step");
  step.num_decode_tokens = m.int32_at(jstep, "num_decode_tokens", "step");
  step.max_model_len = m.int32_at(jstep, "max_model_len", "step");
  step.swa.block_size = m.int32_at(jstep, "swa_block_size", "step");
  step.c4a.block_size = m.int32_at(jstep, "c4a_block_size", "step");
  step.c128a.block_size = m.int32_at(jstep, "c128a_block_size", "step");

  const json& jfiles = m.object(m.member(manifest, "files", "files"), "files");
  const auto file = [&](const std::string& field) {
    return m.file_name(m.member(jfiles, field, "files." + field), "files." + field);
  };
  const std::string query_start_loc = file("query_start_loc"), seq_lens = file("seq_lens"),
                    token_to_req = file("token_to_req"), decode_valid = file("decode_valid"),
                    swa_table = file("swa_block_table"), c4a_table = file("c4a_block_table"),
                    c128a_table = file("c128a_block_table");

  struct LayerFiles {
    int32_t layer;
    std::string decode_local, prefill_topk, field;
  };
  std::vector<LayerFiles> layers;
  std::set<int32_t> seen;
  const json& jlayers = m.array(m.member(manifest, "c4a_layers", "c4a_layers"), "c4a_layers");
  for (size_t i = 0; i < jlayers.size(); ++i) {
    const std::string field = "c4a_layers[" + std::to_string(i) + "]";
    const json& entry = m.object(jlayers[i], field);
    const int32_t layer = m.int32_at(entry, "layer", field);
    if (layer < 0 || layer >= schedule.num_layers()) {
      m.fail(field + ".layer", "layer " + std::to_string(layer) + " out of range [0, " +
                                   std::to_string(schedule.num_layers()) + ")");
    }
    if (!seen.insert(layer).second) m.fail(field + ".layer", "duplicate layer " + std::to_string(layer));
    layers.push_back({layer, m.file_name(m.member(entry, "decode_local", field + ".decode_local"), field + ".decode_local"),
                      m.file_name(m.member(entry, "prefill_topk", field + ".prefill_topk"), field + ".prefill_topk"),
                      field});
  }

  const ArrayLoader npy_files(root);
  step.query_start_loc = npy_files.vector(query_start_loc, "query_start_loc");
  step.seq_lens = npy_files.vector(seq_lens, "seq_lens");
  step.token_to_req = npy_files.vector(token_to_req, "token_to_req");
  step.decode_valid = npy_files.bytes(decode_valid, "decode_valid");
  step.swa.block_table = npy_files.matrix(swa_table, "swa_block_table");
  step.c4a.block_table = npy_files.matrix(c4a_table, "c4a_block_table");
  step.c128a.block_table = npy_files.matrix(c128a_table, "c128a_block_table");

  capture.c4a_per_layer.resize(schedule.compress_ratios.size());
  const Eigen::Index num_prefill_tokens = step.token_to_req.size() - step.num_decode_tokens;
  for (const LayerFiles& lf : layers) {
    ref::C4aIndexerOutput& out = capture.c4a_per_layer[static_cast<size_t>(lf.layer)];
    out.decode_local = npy_files.matrix(lf.decode_local, lf.field + ".decode_local");
    npy_files.check_rows(out.decode_local, step.num_decode_tokens, lf.decode_local, lf.field + ".decode_local",
                         "step.num_decode_tokens");
    out.prefill_topk = npy_files.matrix(lf.prefill_topk, lf.field + ".prefill_topk");
    npy_files.check_rows(out.prefill_topk, num_prefill_tokens, lf.prefill_topk, lf.field + ".prefill_topk",
                         "tokens after the decode tokens");
  }
  return capture;
}

}  // namespace dsv4::harness
