// Capture save/load: exact round trips of hand-built steps, and every malformed capture
// (manifest or .npy) rejected with a std::runtime_error naming the file and the field.
#include "harness/capture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <tuple>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/npy.h"
#include "harness/persistent_buffers.h"
#include "support/scratch_dir.h"

namespace dsv4::harness {
namespace {

using dsv4::testing::ScratchDir;
namespace fs = std::filesystem;
using nlohmann::json;

ref::IndexVector vec(std::vector<int32_t> v) {
  return Eigen::Map<ref::IndexVector>(v.data(), static_cast<Eigen::Index>(v.size()));
}

ref::IndexMatrix mat(int32_t rows, int32_t cols, int32_t first) {
  ref::IndexMatrix m(rows, cols);
  for (int32_t i = 0; i < rows; ++i) {
    for (int32_t j = 0; j < cols; ++j) m(i, j) = (i * cols + j) % 3 == 2 ? -1 : first + i * cols + j;
  }
  return m;
}

// Two decode requests (one speculative with a padding token) and a 5-token prefill chunk,
// on a 4-layer schedule with C4A layers 1 and 3; structurally valid (loading checks that).
Capture mixed_capture() {
  Capture c;
  c.schedule.name = "tiny";
  c.schedule.compress_ratios = {0, 4, 128, 4};
  c.schedule.window = 8;
  c.schedule.c4a_topk = 16;
  c.schedule.main_block_size = 256;
  ref::Step& s = c.step;
  s.query_start_loc = vec({0, 1, 3, 8});
  s.seq_lens = vec({40, 77, 30});
  s.token_to_req = vec({0, 1, 1, 2, 2, 2, 2, 2});
  s.num_decode_tokens = 3;
  s.decode_valid = {1, 1, 0};
  s.swa.block_table = mat(3, 5, 10);  // 80 tokens a row: seq_lens 77 fits (SPEC §4)
  s.swa.block_size = 16;
  s.c4a.block_table = mat(3, 2, 100);
  s.c4a.block_size = 64;
  s.c128a.block_table = mat(3, 1, 7);
  s.c128a.block_size = 2;
  s.max_model_len = 4096;
  c.c4a_per_layer.resize(4);
  c.c4a_per_layer[1] = {mat(3, 12, 0), mat(5, 12, 1)};
  c.c4a_per_layer[3] = {mat(3, 16, 2), mat(5, 16, 3)};
  return c;
}

// No tokens, no requests: every array has a 0-size dimension.
Capture empty_capture() {
  Capture c;
  c.schedule.name = "empty";
  c.schedule.compress_ratios = {1, 4};
  c.step.query_start_loc = vec({0});
  c.step.seq_lens = vec({});
  c.step.token_to_req = vec({});
  c.step.swa.block_table = ref::IndexMatrix(0, 3);
  c.step.swa.block_size = 64;
  c.step.c4a.block_table = ref::IndexMatrix(0, 0);
  c.step.c4a.block_size = 64;
  c.step.c128a.block_table = ref::IndexMatrix(0, 1);
  c.step.c128a.block_size = 2;
  c.c4a_per_layer.resize(2);
  c.c4a_per_layer[1] = {ref::IndexMatrix(0, 512), ref::IndexMatrix(0, 512)};
  return c;
}

void expect_same_matrix(const ref::IndexMatrix& a, const ref::IndexMatrix& b, const std::string& what) {
  ASSERT_EQ(a.rows(), b.rows()) << what;
  ASSERT_EQ(a.cols(), b.cols()) << what;
  EXPECT_TRUE(a == b) << what;
}

void expect_same_vector(const ref::IndexVector& a, const ref::IndexVector& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_TRUE(a == b) << what;
}

void expect_same_capture(const Capture& a, const Capture& b) {
  EXPECT_EQ(a.schedule.name, b.schedule.name);
  EXPECT_EQ(a.schedule.compress_ratios, b.schedule.compress_ratios);
  EXPECT_EQ(a.schedule.window, b.schedule.window);
  EXPECT_EQ(a.schedule.c4a_topk, b.schedule.c4a_topk);
  EXPECT_EQ(a.schedule.main_block_size, b.schedule.main_block_size);
  expect_same_vector(a.step.query_start_loc, b.step.query_start_loc, "query_start_loc");
  expect_same_vector(a.step.seq_lens, b.step.seq_lens, "seq_lens");
  expect_same_vector(a.step.token_to_req, b.step.token_to_req, "token_to_req");
  EXPECT_EQ(a.step.num_decode_tokens, b.step.num_decode_tokens);
  EXPECT_EQ(a.step.decode_valid, b.step.decode_valid);
  for (const auto& [name, ca, cb] : {std::tuple<const char*, const ref::PagedCache*, const ref::PagedCache*>{
                                        "swa", &a.step.swa, &b.step.swa},
                                    {"c4a", &a.step.c4a, &b.step.c4a},
                                    {"c128a", &a.step.c128a, &b.step.c128a}}) {
    expect_same_matrix(ca->block_table, cb->block_table, name);
    EXPECT_EQ(ca->block_size, cb->block_size) << name;
    EXPECT_EQ(ca->block_span, cb->block_span) << name;
    EXPECT_EQ(ca->base_offset, cb->base_offset) << name;
  }
  EXPECT_EQ(a.swa_table_row_stride, b.swa_table_row_stride);
  EXPECT_EQ(a.c4a_table_row_stride, b.c4a_table_row_stride);
  EXPECT_EQ(a.c128a_table_row_stride, b.c128a_table_row_stride);
  ASSERT_EQ(a.persistent.has_value(), b.persistent.has_value());
  if (a.persistent) {
    const PersistentStep &pa = *a.persistent, &pb = *b.persistent;
    EXPECT_EQ(pa.sizes.num_tokens, pb.sizes.num_tokens);
    EXPECT_EQ(pa.sizes.num_decode_tokens, pb.sizes.num_decode_tokens);
    EXPECT_EQ(pa.sizes.num_requests, pb.sizes.num_requests);
    expect_same_vector(pa.query_start_loc, pb.query_start_loc, "persistent query_start_loc");
    expect_same_vector(pa.seq_lens, pb.seq_lens, "persistent seq_lens");
    expect_same_vector(pa.token_to_req, pb.token_to_req, "persistent token_to_req");
    EXPECT_EQ(pa.decode_valid, pb.decode_valid);
    EXPECT_EQ(pa.decode_capacity, pb.decode_capacity);
    EXPECT_EQ(pa.prefill_capacity, pb.prefill_capacity);
    EXPECT_EQ(pa.c128a_capacity, pb.c128a_capacity);
    EXPECT_EQ(pa.output_row_padding, pb.output_row_padding);
    ASSERT_EQ(pa.c4a_per_layer.size(), pb.c4a_per_layer.size());
    for (size_t l = 0; l < pa.c4a_per_layer.size(); ++l) {
      expect_same_matrix(pa.c4a_per_layer[l].decode_local, pb.c4a_per_layer[l].decode_local, "persistent decode_local");
      expect_same_matrix(pa.c4a_per_layer[l].prefill_topk, pb.c4a_per_layer[l].prefill_topk, "persistent prefill_topk");
    }
  }
  EXPECT_EQ(a.step.max_model_len, b.step.max_model_len);
  ASSERT_EQ(a.c4a_per_layer.size(), b.c4a_per_layer.size());
  for (size_t l = 0; l < a.c4a_per_layer.size(); ++l) {
    expect_same_matrix(a.c4a_per_layer[l].decode_local, b.c4a_per_layer[l].decode_local,
                       "decode_local of layer " + std::to_string(l));
    expect_same_matrix(a.c4a_per_layer[l].prefill_topk, b.c4a_per_layer[l].prefill_topk,
                       "prefill_topk of layer " + std::to_string(l));
  }
}

TEST(CaptureTest, RoundTripMixedStep) {
  ScratchDir dir;
  const Capture c = mixed_capture();
  save_capture(c, dir.str());
  expect_same_capture(c, load_capture(dir.str()));
}

TEST(CaptureTest, RoundTripEmptyStepAndEmptyDecodeValid) {
  ScratchDir dir;
  const Capture c = empty_capture();
  save_capture(c, dir.str());
  expect_same_capture(c, load_capture(dir.str()));

  // decode_valid may be empty (all valid) even with decode tokens.
  ScratchDir dir2;
  Capture m = mixed_capture();
  m.step.decode_valid.clear();
  save_capture(m, dir2.str());
  expect_same_capture(m, load_capture(dir2.str()));
}

TEST(CaptureTest, SaveCreatesMissingDirectoriesAndOverwrites) {
  ScratchDir dir;
  const std::string nested = (dir / "a" / "b").string();
  save_capture(empty_capture(), nested);
  const Capture c = mixed_capture();
  save_capture(c, nested);
  expect_same_capture(c, load_capture(nested));
}

TEST(CaptureTest, SaveRejectsWrongNumberOfC4aEntries) {
  ScratchDir dir;
  Capture c = mixed_capture();
  c.c4a_per_layer.resize(3);
  EXPECT_THROW(save_capture(c, dir.str()), std::invalid_argument);
}

TEST(CaptureTest, SaveReportsUnwritableDirectory) {
  ScratchDir dir;
  std::ofstream(dir / "plain_file") << "x";
  EXPECT_THROW(save_capture(mixed_capture(), (dir / "plain_file").string()), std::runtime_error);
}

TEST(CaptureTest, ManifestIsReadableJson) {
  ScratchDir dir;
  save_capture(mixed_capture(), dir.str());
  std::ifstream in(dir / "manifest.json");
  const json m = json::parse(in);
  EXPECT_EQ(m["format"], "dsv4-step-capture");
  EXPECT_EQ(m["version"], 1);
  EXPECT_EQ(m["step"]["num_decode_tokens"], 3);
  EXPECT_EQ(m["files"]["seq_lens"], "seq_lens.npy");
  ASSERT_EQ(m["c4a_layers"].size(), 2u);  // only layers with indexer output
  EXPECT_EQ(m["c4a_layers"][0]["layer"], 1);
  EXPECT_EQ(m["c4a_layers"][1]["layer"], 3);
}

// --- SPEC §7 captures (format version 2) ---------------------------------------------------

// mixed_capture with block spans and base offsets, the SWA table's rows 8 int32 apart, and its
// step in persistent buffers (3 padded rows, 2 decode rows past D, ... : make_persistent).
Capture engine_capture() {
  StepCase c = step_case(mixed_capture());
  c.step.swa.block_span = 20;
  c.step.swa.base_offset = 1000;
  c.step.c4a.block_span = 70;
  c.step.c128a.base_offset = 2147483000;
  c.layout.swa_table.row_padding = 3;
  StepCapacity extra;
  extra.extra_tokens = 3;
  extra.extra_decode_rows = 2;
  extra.extra_prefill_rows = 1;
  extra.extra_requests = 2;
  extra.extra_table_rows = 1;
  extra.c128a_extra_columns = 4;
  extra.output_row_padding = 8;
  make_persistent(c, extra, 11);
  return to_capture(c);
}

TEST(CaptureTest, RoundTripEngineCapture) {
  ScratchDir dir;
  const Capture c = engine_capture();
  ASSERT_TRUE(c.persistent.has_value());
  EXPECT_EQ(c.persistent->token_capacity(), 11);
  EXPECT_EQ(c.swa_table_row_stride, 8);
  save_capture(c, dir.str());
  const Capture loaded = load_capture(dir.str());
  expect_same_capture(c, loaded);
  // What the manifest says, and the files at the capacities.
  std::ifstream in(dir / "manifest.json");
  const json m = json::parse(in);
  EXPECT_EQ(m["version"], 2);
  EXPECT_EQ(m["step"]["swa_block_span"], 20);
  EXPECT_EQ(m["step"]["swa_base_offset"], 1000);
  EXPECT_EQ(m["step"]["swa_table_row_stride"], 8);
  EXPECT_FALSE(m["step"].contains("c4a_base_offset"));
  EXPECT_EQ(m["engine"]["num_tokens"], 8);
  EXPECT_EQ(m["engine"]["num_requests"], 3);
  EXPECT_EQ(m["engine"]["decode_capacity"], 5);
  EXPECT_EQ(m["engine"]["prefill_capacity"], 6);
  EXPECT_EQ(m["engine"]["c128a_capacity"], c.persistent->c128a_capacity);
  EXPECT_EQ(m["engine"]["output_row_padding"], 8);
  EXPECT_EQ(npy::read_int32((dir / "token_to_req.npy").string()).shape, (std::vector<int64_t>{11}));
  EXPECT_EQ(npy::read_int32((dir / "c4a_layer01_decode_local.npy").string()).shape, (std::vector<int64_t>{5, 12}));
  // The case it replays: the stride as layout, the persistent buffers for the graph path.
  const StepCase replayed = step_case(loaded);
  EXPECT_EQ(replayed.layout.swa_table.row_padding, 3);
  EXPECT_TRUE(replayed.persistent.has_value());
}

TEST(CaptureTest, SpansAndOffsetsAloneMakeVersion2WithoutEngine) {
  ScratchDir dir;
  Capture c = mixed_capture();
  c.step.c4a.base_offset = -3;
  save_capture(c, dir.str());
  std::ifstream in(dir / "manifest.json");
  const json m = json::parse(in);
  EXPECT_EQ(m["version"], 2);
  EXPECT_EQ(m["step"]["c4a_base_offset"], -3);
  EXPECT_FALSE(m.contains("engine"));
  expect_same_capture(c, load_capture(dir.str()));
}

// Persistent buffers whose head is not the live step would load as another step.
TEST(CaptureTest, SaveRejectsPersistentBuffersThatAreNotTheStep) {
  ScratchDir dir;
  const auto rejects = [&](const std::function<void(Capture&)>& edit, const std::string& what) {
    Capture c = engine_capture();
    edit(c);
    try {
      save_capture(c, dir.str());
      ADD_FAILURE() << "no error for " << what;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  rejects([](Capture& c) { c.persistent->seq_lens(1) += 1; }, "seq_lens");
  rejects([](Capture& c) { c.persistent->sizes.num_tokens -= 1; }, "run-time sizes");
  rejects([](Capture& c) { c.persistent->decode_capacity = 1; }, "capacities");
  rejects([](Capture& c) { c.persistent->c4a_per_layer[3].prefill_topk(0, 0) += 1; }, "C4A layer 3");
  rejects([](Capture& c) { c.c4a_table_row_stride = 1; }, "row stride of 1");
}

// --- malformed captures -------------------------------------------------------------------

class MalformedCaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    save_capture(mixed_capture(), dir_.str());
    std::ifstream in(dir_ / "manifest.json");
    manifest_ = json::parse(in);
  }

  // The manifest as saved (each case edits a copy of it).
  json manifest() const { return manifest_; }
  void write_manifest(const json& m) const { write_text("manifest.json", m.dump(2)); }
  void write_text(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary | std::ios::trunc) << text;
  }
  std::vector<uint8_t> read_bytes(const std::string& name) const {
    std::ifstream in(dir_ / name, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  void write_bytes(const std::string& name, const std::vector<uint8_t>& bytes) const {
    npy::write_file((dir_ / name).string(), bytes);
  }
  // Loading must throw std::runtime_error whose message contains every one of `parts`.
  void expect_error(const std::vector<std::string>& parts) const {
    try {
      load_capture(dir_.str());
      ADD_FAILURE() << "no error; expected one mentioning " << parts.front();
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
    }
  }

  ScratchDir dir_;
  json manifest_;
};

TEST_F(MalformedCaptureTest, MissingManifest) {
  fs::remove(dir_ / "manifest.json");
  expect_error({dir_.str(), "manifest.json"});
}

TEST_F(MalformedCaptureTest, MissingDirectory) {
  fs::remove_all(dir_ / "");
  expect_error({"manifest.json"});
}

TEST_F(MalformedCaptureTest, BadJson) {
  write_text("manifest.json", "{\"format\": \"dsv4-step-capture\", ");
  expect_error({"manifest.json", "invalid JSON"});
  write_text("manifest.json", "[1, 2]");
  expect_error({"manifest.json", "object"});
}

TEST_F(MalformedCaptureTest, MissingFields) {
  const struct {
    const char* pointer;
    const char* field;
  } cases[] = {
      {"/format", "format"},
      {"/version", "version"},
      {"/schedule", "schedule"},
      {"/schedule/name", "schedule.name"},
      {"/schedule/compress_ratios", "schedule.compress_ratios"},
      {"/schedule/window", "schedule.window"},
      {"/schedule/c4a_topk", "schedule.c4a_topk"},
      {"/schedule/main_block_size", "schedule.main_block_size"},
      {"/step", "step"},
      {"/step/num_decode_tokens", "step.num_decode_tokens"},
      {"/step/max_model_len", "step.max_model_len"},
      {"/step/swa_block_size", "step.swa_block_size"},
      {"/step/c4a_block_size", "step.c4a_block_size"},
      {"/step/c128a_block_size", "step.c128a_block_size"},
      {"/files", "files"},
      {"/files/query_start_loc", "files.query_start_loc"},
      {"/files/seq_lens", "files.seq_lens"},
      {"/files/token_to_req", "files.token_to_req"},
      {"/files/decode_valid", "files.decode_valid"},
      {"/files/swa_block_table", "files.swa_block_table"},
      {"/files/c4a_block_table", "files.c4a_block_table"},
      {"/files/c128a_block_table", "files.c128a_block_table"},
      {"/c4a_layers", "c4a_layers"},
      {"/c4a_layers/0/layer", "c4a_layers[0].layer"},
      {"/c4a_layers/1/decode_local", "c4a_layers[1].decode_local"},
      {"/c4a_layers/0/prefill_topk", "c4a_layers[0].prefill_topk"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.pointer);
    json m = manifest();
    m[json::json_pointer(c.pointer).parent_pointer()].erase(json::json_pointer(c.pointer).back());
    write_manifest(m);
    expect_error({"manifest.json", std::string("missing field '") + c.field + "'"});
  }
}

TEST_F(MalformedCaptureTest, WrongTypesAndValues) {
  const struct {
    const char* pointer;
    json value;
    const char* field;
  } cases[] = {
      {"/format", "something-else", "format"},
      {"/format", 1, "format"},
      {"/version", 3, "version"},
      {"/version", 0, "version"},
      {"/version", "1", "version"},
      {"/schedule", json::array(), "schedule"},
      {"/schedule/name", 5, "schedule.name"},
      {"/schedule/compress_ratios", 4, "schedule.compress_ratios"},
      {"/schedule/compress_ratios/2", "x", "schedule.compress_ratios[2]"},
      {"/schedule/window", "128", "schedule.window"},
      {"/schedule/window", 1.5, "schedule.window"},
      {"/schedule/window", true, "schedule.window"},
      {"/schedule/c4a_topk", 4294967296LL, "schedule.c4a_topk"},
      {"/schedule/main_block_size", -2147483649LL, "schedule.main_block_size"},
      {"/step/num_decode_tokens", nullptr, "step.num_decode_tokens"},
      {"/step/max_model_len", json::object(), "step.max_model_len"},
      {"/files/seq_lens", 3, "files.seq_lens"},
      {"/files/seq_lens", "../seq_lens.npy", "files.seq_lens"},
      {"/files/seq_lens", "/etc/passwd", "files.seq_lens"},
      {"/files/seq_lens", "", "files.seq_lens"},
      {"/c4a_layers", json::object(), "c4a_layers"},
      {"/c4a_layers/0", 1, "c4a_layers[0]"},
      {"/c4a_layers/0/layer", 4, "c4a_layers[0].layer"},   // out of range (4 layers)
      {"/c4a_layers/0/layer", -1, "c4a_layers[0].layer"},
      {"/c4a_layers/1/layer", 1, "c4a_layers[1].layer"},   // duplicate
      {"/c4a_layers/1/decode_local", "..", "c4a_layers[1].decode_local"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.pointer) + " = " + c.value.dump());
    json m = manifest();
    m[json::json_pointer(c.pointer)] = c.value;
    write_manifest(m);
    expect_error({"manifest.json", std::string("'") + c.field + "'"});
  }
}

TEST_F(MalformedCaptureTest, MissingNpyFile) {
  fs::remove(dir_ / "seq_lens.npy");
  expect_error({"seq_lens.npy", "(seq_lens)", "not found"});
  save_capture(mixed_capture(), dir_.str());
  fs::remove(dir_ / "c4a_layer03_prefill_topk.npy");
  expect_error({"c4a_layer03_prefill_topk.npy", "c4a_layers[1].prefill_topk"});
}

TEST_F(MalformedCaptureTest, BadMagic) {
  std::vector<uint8_t> bytes = read_bytes("token_to_req.npy");
  bytes[0] = 'P';
  write_bytes("token_to_req.npy", bytes);
  expect_error({"token_to_req.npy", "(token_to_req)", "field 'magic'"});
}

TEST_F(MalformedCaptureTest, UnsupportedDtype) {
  std::vector<uint8_t> bytes = read_bytes("seq_lens.npy");
  const std::string from = "'<i4'";
  std::search(bytes.begin(), bytes.end(), from.begin(), from.end())[2] = 'f';  // float32
  write_bytes("seq_lens.npy", bytes);
  expect_error({"seq_lens.npy", "(seq_lens)", "field 'descr'", "'<f4'"});
  // decode_valid must be uint8 or bool, not int32.
  save_capture(mixed_capture(), dir_.str());
  const int32_t valid[3] = {1, 1, 0};
  write_bytes("decode_valid.npy", npy::encode_int32({3}, valid));
  expect_error({"decode_valid.npy", "(decode_valid)", "field 'descr'"});
}

TEST_F(MalformedCaptureTest, FortranOrder) {
  std::vector<uint8_t> bytes = read_bytes("swa_block_table.npy");
  const std::string from = "False", to = "True ";
  std::copy(to.begin(), to.end(), std::search(bytes.begin(), bytes.end(), from.begin(), from.end()));
  write_bytes("swa_block_table.npy", bytes);
  expect_error({"swa_block_table.npy", "field 'fortran_order'"});
}

TEST_F(MalformedCaptureTest, TruncatedData) {
  std::vector<uint8_t> bytes = read_bytes("c4a_block_table.npy");
  bytes.resize(bytes.size() - 3);
  write_bytes("c4a_block_table.npy", bytes);
  expect_error({"c4a_block_table.npy", "(c4a_block_table)", "field 'data'", "truncated"});
}

TEST_F(MalformedCaptureTest, HeaderLengthPastEndOfFile) {
  std::vector<uint8_t> bytes = read_bytes("c128a_block_table.npy");
  bytes.resize(40);  // inside the header
  write_bytes("c128a_block_table.npy", bytes);
  expect_error({"c128a_block_table.npy", "field 'header_len'"});
}

TEST_F(MalformedCaptureTest, WrongRank) {
  const int32_t v[3] = {40, 77, 30};
  write_bytes("seq_lens.npy", npy::encode_int32({1, 3}, v));
  expect_error({"seq_lens.npy", "field 'shape'", "expected rank 1, got rank 2"});
  save_capture(mixed_capture(), dir_.str());
  write_bytes("swa_block_table.npy", npy::encode_int32({3}, v));
  expect_error({"swa_block_table.npy", "field 'shape'", "expected rank 2, got rank 1"});
}

TEST_F(MalformedCaptureTest, C4aRowsDisagreeWithTheStep) {
  const ref::IndexMatrix m = mat(2, 12, 0);  // D is 3
  write_bytes("c4a_layer01_decode_local.npy", npy::encode_int32({2, 12}, m.data()));
  expect_error({"c4a_layer01_decode_local.npy", "field 'shape'", "3 rows"});
  save_capture(mixed_capture(), dir_.str());
  const ref::IndexMatrix p = mat(4, 16, 0);  // T - D is 5
  write_bytes("c4a_layer03_prefill_topk.npy", npy::encode_int32({4, 16}, p.data()));
  expect_error({"c4a_layer03_prefill_topk.npy", "field 'shape'", "5 rows"});
}

}  // namespace
}  // namespace dsv4::harness
