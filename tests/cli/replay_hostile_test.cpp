// `dsv4 replay` on broken and hostile captures (each one an issue reproduction): invalid
// input exits 2 with the file, field, layer and row named; nothing crashes, nothing is
// allocated past the named limits; a real disagreement stays exit 1 (cli_test.cpp).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "cli_test_util.h"
#include "harness/capture.h"
#include "harness/errors.h"

namespace dsv4::harness::testing {
namespace {

using nlohmann::json;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(ReplayHostile, ShippedCapturesPass) {
  for (const char* name : {"capture_flash_mixed", "capture_flash_decode", "capture_pro_prefill", "capture_flash_engine"}) {
    const CliRun r = dsv4({"replay", shipped(name), "--backend", "host"});
    EXPECT_EQ(r.code, kExitPass) << name << "\n" << r.all();
  }
  // The engine capture (SPEC §7, version 2) also went through the step graph.
  const CliRun engine = dsv4({"replay", shipped("capture_flash_engine"), "--backend", "host"});
  EXPECT_CONTAINS(engine.out, "persistent buffers: T_cap 10 D_cap 5 R_cap 5 prefill rows 6 C128A P_cap 8192");
  EXPECT_CONTAINS(engine.out, "SPEC §7: 1 of 1 steps also in persistent buffers, recorded as a step graph and "
                              "replayed with run-time sizes (builds: host 23)");
}

// SPEC §7 captures (format version 2) broken one field at a time: invalid input naming it.
TEST(ReplayHostile, EngineCaptureFieldsOutOfRangeAreInvalidInputNamingTheField) {
  const struct {
    const char* pointer;
    nlohmann::json value;
    std::vector<std::string> parts;
  } cases[] = {
      {"/version", 1, {"field 'step.swa_block_span'", "a version 2 field (SPEC §7) in a version 1 manifest"}},
      {"/step/swa_block_span", 63, {"field 'step.swa_block_span'", "63 is outside [64,"}},
      {"/step/c4a_base_offset", 2147483648LL, {"field 'step.c4a_base_offset'", "does not fit int32"}},
      {"/step/swa_table_row_stride", 6, {"field 'step.swa_table_row_stride'", "6 is below the 7 columns"}},
      {"/step/swa_table_row_stride", 2147483647,
       {"field 'step.swa_table_row_stride'", "above the limit of", "(--max-capture-bytes)"}},
      {"/step/num_decode_tokens", 6, {"field 'step.num_decode_tokens'", "6 is above engine.decode_capacity = 5"}},
      {"/engine", 5, {"field 'engine'", "expected an object"}},
      {"/engine/num_tokens", 11, {"field 'engine.num_tokens'", "11 is above T_cap = 10"}},
      {"/engine/num_tokens", 5,
       {"query_start_loc.npy (query_start_loc)", "query_start_loc[3] = 6", "engine.num_tokens = 5"}},
      {"/engine/num_tokens", -1, {"field 'engine.num_tokens'", "-1 is outside [0,"}},
      {"/engine/num_requests", 6, {"field 'engine.num_requests'", "6 is above R_cap = 5"}},
      {"/engine/decode_capacity", 11, {"field 'engine.decode_capacity'", "11 is above T_cap = 10"}},
      {"/engine/decode_capacity", 4, {"decode_valid.npy (decode_valid)", "has 5 entries, expected engine.decode_capacity = 4"}},
      {"/engine/prefill_capacity", 2, {"field 'engine.prefill_capacity'", "2 is below T - D = 3"}},
      {"/engine/c128a_capacity", 127, {"field 'engine.c128a_capacity'", "127 is below the C128A effective width E = 128"}},
      {"/engine/output_row_padding", 6, {"field 'engine.output_row_padding'", "not a multiple of 4"}},
      {"/engine/output_row_padding", 68, {"field 'engine.output_row_padding'", "68 is outside [0, 64]"}},
      {"/engine/c128a_capacity", "8192", {"field 'engine.c128a_capacity'", "expected an integer"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.pointer) + " = " + c.value.dump());
    CaptureCopy copy("capture_flash_engine");
    copy.edit_manifest([&](nlohmann::json& m) { m[nlohmann::json::json_pointer(c.pointer)] = c.value; });
    const auto start = std::chrono::steady_clock::now();
    const CliRun r = copy.replay();
    EXPECT_LT(seconds_since(start), 5.0);
    EXPECT_EQ(r.code, kExitInvalidInput) << r.all();
    for (const std::string& part : c.parts) EXPECT_CONTAINS(r.err, part);
  }
  for (const char* field : {"num_tokens", "num_requests", "decode_capacity", "prefill_capacity", "c128a_capacity"}) {
    CaptureCopy copy("capture_flash_engine");
    copy.edit_manifest([&](nlohmann::json& m) { m["engine"].erase(field); });
    const CliRun r = copy.replay();
    EXPECT_EQ(r.code, kExitInvalidInput) << r.all();
    EXPECT_CONTAINS(r.err, std::string("missing field 'engine.") + field + "'");
  }
}

// The files of an engine capture against its capacities.
TEST(ReplayHostile, EngineCaptureFilesThatDisagreeWithTheCapacitiesAreInvalidInput) {
  {
    CaptureCopy c("capture_flash_engine");
    npy::Array<int32_t> qsl = c.read_int32("query_start_loc.npy");
    qsl.values.pop_back();
    qsl.shape = {static_cast<int64_t>(qsl.values.size())};
    c.write_int32("query_start_loc.npy", qsl);
    const CliRun r = c.replay();
    EXPECT_EQ(r.code, kExitInvalidInput) << r.all();
    EXPECT_CONTAINS(r.err, "query_start_loc.npy (query_start_loc): structural error: has 5 entries, expected R_cap + 1 = 6");
  }
  {
    CaptureCopy c("capture_flash_engine");
    npy::Array<int32_t> table = c.read_int32("c4a_block_table.npy");
    table.shape[0] = 4;  // R_cap is 5
    table.values.resize(static_cast<size_t>(4 * table.shape[1]));
    c.write_int32("c4a_block_table.npy", table);
    const CliRun r = c.replay();
    EXPECT_EQ(r.code, kExitInvalidInput) << r.all();
    EXPECT_CONTAINS(r.err, "c4a_block_table.npy (c4a_block_table): structural error: has 4 rows, fewer than R_cap = 5");
  }
  {
    CaptureCopy c("capture_flash_engine");
    npy::Array<int32_t> picks = c.read_int32("c4a_layer02_decode_local.npy");
    picks.shape[0] = 3;  // D_cap is 5
    picks.values.resize(static_cast<size_t>(3 * picks.shape[1]));
    c.write_int32("c4a_layer02_decode_local.npy", picks);
    const CliRun r = c.replay();
    EXPECT_EQ(r.code, kExitInvalidInput) << r.all();
    EXPECT_CONTAINS(r.err, "c4a_layer02_decode_local.npy");
    EXPECT_CONTAINS(r.err, "expected 5 rows (engine.decode_capacity, D_cap), got 3");
  }
  {  // The live step itself broken at its head: a structural error as in version 1.
    CaptureCopy c("capture_flash_engine");
    npy::Array<int32_t> seq_lens = c.read_int32("seq_lens.npy");
    seq_lens.values[2] = 1;  // below request 2's 3 tokens
    c.write_int32("seq_lens.npy", seq_lens);
    const CliRun r = c.replay();
    EXPECT_EQ(r.code, kExitInvalidInput) << r.all();
    EXPECT_CONTAINS(r.err, "seq_lens.npy (seq_lens): structural error: seq_lens[2] = 1: below its query length");
  }
  {  // Past the live step nothing is read: any value there replays.
    CaptureCopy c("capture_flash_engine");
    npy::Array<int32_t> ttr = c.read_int32("token_to_req.npy");
    ttr.values[9] = 1234567;
    c.write_int32("token_to_req.npy", ttr);
    npy::Array<int32_t> seq_lens = c.read_int32("seq_lens.npy");
    seq_lens.values[4] = -5;
    c.write_int32("seq_lens.npy", seq_lens);
    const CliRun r = c.replay();
    EXPECT_EQ(r.code, kExitPass) << r.all();
  }
}

// Was "1 mismatch(es) ... FAIL", exit 1, exactly like a real divergence.
TEST(ReplayHostile, StructurallyInvalidCaptureIsInvalidInputWithFileFieldAndRow) {
  CaptureCopy c;
  npy::Array<int32_t> seq_lens = c.read_int32("seq_lens.npy");
  seq_lens.values[1] = 1;  // below request 1's query length
  c.write_int32("seq_lens.npy", seq_lens);
  const CliRun r = c.replay();
  EXPECT_EQ(r.code, kExitInvalidInput) << r.all();
  EXPECT_CONTAINS(r.err, "seq_lens.npy (seq_lens): structural error: seq_lens[1] = 1: below its query length");
  EXPECT_NOT_CONTAINS(r.all(), "mismatch");

  CaptureCopy t;
  npy::Array<int32_t> ttr = t.read_int32("token_to_req.npy");
  ttr.values[7] = 0;  // token 7 belongs to request 2
  t.write_int32("token_to_req.npy", ttr);
  const CliRun rt = t.replay();
  EXPECT_EQ(rt.code, kExitInvalidInput);
  EXPECT_CONTAINS(rt.err, "token_to_req.npy (token_to_req): structural error: token_to_req[7] = 0");

  CaptureCopy w;  // a SWA table too narrow for a request's tokens
  npy::Array<int32_t> swa = w.read_int32("swa_block_table.npy");
  npy::Array<int32_t> narrow{{swa.shape[0], 1}, {}};
  for (int64_t r2 = 0; r2 < swa.shape[0]; ++r2)
    narrow.values.push_back(swa.values[static_cast<size_t>(r2 * swa.shape[1])]);
  w.write_int32("swa_block_table.npy", narrow);
  const CliRun rw = w.replay();
  EXPECT_EQ(rw.code, kExitInvalidInput);
  EXPECT_CONTAINS(rw.err, "seq_lens.npy (seq_lens): structural error: seq_lens[0] = ");
  EXPECT_CONTAINS(rw.err, "its row of swa_block_table.npy can hold");

  CaptureCopy d;
  d.edit_manifest([](json& m) { m["step"]["num_decode_tokens"] = 3; });  // inside request 1
  const CliRun rd = d.replay();
  EXPECT_EQ(rd.code, kExitInvalidInput);
  EXPECT_CONTAINS(rd.err, "manifest.json: field 'step.num_decode_tokens': structural error:");
  EXPECT_CONTAINS(rd.err, "not a request boundary");
}

// Was "content errors: reference 0, optimized 0 on a valid step: 24591 ... (a generator or
// reference bug)".
TEST(ReplayHostile, ContentErrorsInACaptureAreInvalidInputWithTheirCount) {
  CaptureCopy c;
  npy::Array<int32_t> table = c.read_int32("c4a_block_table.npy");
  for (int32_t& v : table.values) v = -1;
  c.write_int32("c4a_block_table.npy", table);
  const CliRun r = c.replay();
  EXPECT_EQ(r.code, kExitInvalidInput) << r.all();
  EXPECT_CONTAINS(r.err, "24591 content errors");
  EXPECT_CONTAINS(r.err, "the first in layer 2");
  EXPECT_CONTAINS(r.err, "--allow-content-errors");
  EXPECT_CONTAINS(r.out, "result: INVALID INPUT (content errors), 0 mismatch(es)");
  EXPECT_NOT_CONTAINS(r.all(), "generator or reference bug");
  EXPECT_NOT_CONTAINS(r.all(), "reference 0, optimized 0");
  const CliRun allowed = c.replay({"--allow-content-errors"});
  EXPECT_EQ(allowed.code, kExitPass) << allowed.all();
}

// Was 50 s and 8.6 GB for a 24-token step.
TEST(ReplayHostile, HugeWindowIsRejectedBeforeAllocatingWithTheLimitNamed) {
  CaptureCopy c;
  c.edit_manifest([](json& m) { m["schedule"]["window"] = 1048576; });
  const auto start = std::chrono::steady_clock::now();
  const CliRun r = c.replay();
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(r.code, kExitInvalidInput) << r.all();
  EXPECT_CONTAINS(r.err, "--max-step-bytes");
  EXPECT_CONTAINS(r.err, "above the limit of 1073741824 bytes");
}

// Was a bare std::bad_alloc instead of the width error.
TEST(ReplayHostile, WindowPastInt32WidthIsRejectedWithTheWindowLimit) {
  CaptureCopy c;
  c.edit_manifest([](json& m) { m["schedule"]["window"] = 2147483647; });
  const CliRun r = c.replay();
  EXPECT_EQ(r.code, kExitInvalidInput) << r.all();
  EXPECT_CONTAINS(r.err, "field 'schedule.window': 2147483647 is outside [1, 1048576] (max_window");
  EXPECT_NOT_CONTAINS(r.err, "bad_alloc");

  CaptureCopy k;  // a C4A decode width past the row-width limit
  k.edit_manifest([](json& m) { m["schedule"]["c4a_topk"] = 2147483000; });
  const CliRun rk = k.replay();
  EXPECT_EQ(rk.code, kExitInvalidInput);
  EXPECT_CONTAINS(rk.err, "field 'schedule.c4a_topk'");
  EXPECT_CONTAINS(rk.err, "max_row_width");
}

// Every .npy was read whole before its header was checked: a 512 MiB sparse file cost 1 GB
// and the error then blamed another file.
TEST(ReplayHostile, OversizedNpyIsRejectedFromItsHeaderNamingTheFile) {
  CaptureCopy c;
  std::filesystem::resize_file(c.file("c4a_block_table.npy"), uint64_t{512} << 20);  // sparse trailing bytes
  const auto start = std::chrono::steady_clock::now();
  const CliRun r = c.replay();
  EXPECT_LT(seconds_since(start), 2.0);
  EXPECT_EQ(r.code, kExitInvalidInput) << r.all();
  EXPECT_CONTAINS(r.err, "c4a_block_table.npy (c4a_block_table): field 'data'");
  EXPECT_CONTAINS(r.err, "(trailing bytes)");

  // A header declaring 512 MiB (the file really that long, sparse) past --max-capture-bytes.
  CaptureCopy big;
  {
    std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (20, 6710886), }";
    header.append(117 - header.size(), ' ');
    header += '\n';
    std::ofstream out(big.file("c4a_layer02_prefill_topk.npy"), std::ios::binary | std::ios::trunc);
    out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size()) << '\x00' << header;
  }
  std::filesystem::resize_file(big.file("c4a_layer02_prefill_topk.npy"), 128 + uint64_t{20} * 6710886 * 4);
  const CliRun rb = big.replay({"--max-capture-bytes", "64M"});
  EXPECT_EQ(rb.code, kExitInvalidInput) << rb.all();
  EXPECT_CONTAINS(rb.err, "c4a_layer02_prefill_topk.npy (c4a_layers[0].prefill_topk of layer 2): field 'data'");
  EXPECT_CONTAINS(rb.err, "--max-capture-bytes");
}

// Was "basic_filebuf::underflow error reading the file" with no file.
TEST(ReplayHostile, UnreadableFilesAreNamed) {
  CaptureCopy c;
  std::filesystem::remove(c.file("seq_lens.npy"));
  std::filesystem::create_directory(c.file("seq_lens.npy"));
  const CliRun r = c.replay();
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_CONTAINS(r.err, "seq_lens.npy (seq_lens): not a regular file");

  CaptureCopy f;  // a FIFO: opening it must not wait for a writer
  std::filesystem::remove(f.file("seq_lens.npy"));
  ASSERT_EQ(mkfifo(f.file("seq_lens.npy").c_str(), 0600), 0);
  const CliRun rf = f.replay();
  EXPECT_EQ(rf.code, kExitInvalidInput);
  EXPECT_CONTAINS(rf.err, "seq_lens.npy (seq_lens): not a regular file");

  if (std::filesystem::exists("/proc/self/mem")) {  // a "regular" file whose reads fail
    CaptureCopy p;
    std::filesystem::remove(p.file("token_to_req.npy"));
    std::filesystem::create_symlink("/proc/self/mem", p.file("token_to_req.npy"));
    const CliRun rp = p.replay();
    EXPECT_EQ(rp.code, kExitInvalidInput) << rp.all();
    EXPECT_CONTAINS(rp.err, "token_to_req.npy (token_to_req)");
    std::filesystem::remove(p.file("manifest.json"));
    std::filesystem::create_symlink("/proc/self/mem", p.file("manifest.json"));
    const CliRun rm = p.replay();
    EXPECT_EQ(rm.code, kExitInvalidInput) << rm.all();
    EXPECT_CONTAINS(rm.err, "manifest.json");
  }
}

// Was "prefill_topk has 0 rows, expected T - D = 20" with no layer.
TEST(ReplayHostile, MissingC4aLayerIsNamed) {
  CaptureCopy c;
  c.edit_manifest([](json& m) { m["c4a_layers"].erase(0); });
  const CliRun r = c.replay();
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_CONTAINS(r.err, "field 'c4a_layers': C4A layer 2 (schedule.compress_ratios[2] = 4) has no entry");
}

// Was "expected -4 rows", blaming the C4A file.
TEST(ReplayHostile, EmptyTokenToReqBlamesTokenToReq) {
  CaptureCopy c;
  c.write_int32("token_to_req.npy", npy::Array<int32_t>{{0}, {}});
  const CliRun r = c.replay();
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_CONTAINS(r.err,
                  "token_to_req.npy (token_to_req): structural error: has 0 entries, but query_start_loc[3] = 24");
  EXPECT_NOT_CONTAINS(r.err, "c4a_layer");
  EXPECT_NOT_CONTAINS(r.err, "-4");
}

// Was "compress_ratio = 3: not a DeepSeek-V4 layer kind" with no index.
TEST(ReplayHostile, BadCompressRatioNamesItsIndex) {
  CaptureCopy c;
  c.edit_manifest([](json& m) { m["schedule"]["compress_ratios"][5] = 3; });
  const CliRun r = c.replay();
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_CONTAINS(r.err, "field 'schedule.compress_ratios[5]': 3 is not a DeepSeek-V4 layer kind");
}

// A NUL in a file name used to cut the message short.
TEST(ReplayHostile, NulInAFileNameIsEscapedNotCut) {
  CaptureCopy c;
  c.edit_manifest([](json& m) { m["files"]["seq_lens"] = std::string("seq\0lens.npy\x1b[2J", 16); });
  const CliRun r = c.replay();
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_CONTAINS(r.err, "field 'files.seq_lens': \"seq\\x00lens.npy\\x1b[2J\" is not a plain file name");
  EXPECT_NOT_CONTAINS(r.err, std::string("\0", 1));
}

// Accepted without complaint before.
TEST(ReplayHostile, TrailingGarbageAfterTheJsonIsRejected) {
  for (const std::string& tail : std::vector<std::string>{"garbage", "{}", "]", std::string("\0", 1)}) {
    CaptureCopy c;
    c.append_text("manifest.json", tail);
    const CliRun r = c.replay();
    EXPECT_EQ(r.code, kExitInvalidInput) << r.all();
    EXPECT_CONTAINS(r.err, "manifest.json: invalid JSON");
  }
  CaptureCopy ws;  // whitespace after the object is fine
  ws.append_text("manifest.json", "\n\n  \t\n");
  EXPECT_EQ(ws.replay().code, kExitPass);
}

TEST(ReplayHostile, EmptyCompressRatiosAreRejected) {
  CaptureCopy c;
  c.edit_manifest([](json& m) {
    m["schedule"]["compress_ratios"] = json::array();
    m["c4a_layers"] = json::array();
  });
  const CliRun r = c.replay();
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_CONTAINS(r.err, "field 'schedule.compress_ratios': empty");
}

TEST(ReplayHostile, C4aEntriesForOtherLayersAreRejected) {
  CaptureCopy c;
  c.edit_manifest([](json& m) {
    json extra = m["c4a_layers"][0];
    extra["layer"] = 3;
    m["c4a_layers"].push_back(extra);
  });
  const CliRun r = c.replay();
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_CONTAINS(r.err, "field 'c4a_layers[21].layer': layer 3 is C128A (schedule.compress_ratios[3] = 128)");
}

// main_block_size was read and never used; it now has to agree with the compressed block sizes.
TEST(ReplayHostile, MainBlockSizeMustAgreeWithTheCompressedBlockSizes) {
  CaptureCopy c;
  c.edit_manifest([](json& m) { m["schedule"]["main_block_size"] = 512; });
  const CliRun r = c.replay();
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_CONTAINS(r.err, "field 'step.c4a_block_size': 64 is not schedule.main_block_size / 4 = 128");
  CaptureCopy odd;
  odd.edit_manifest([](json& m) { m["schedule"]["main_block_size"] = 200; });
  EXPECT_CONTAINS(odd.replay().err, "field 'schedule.main_block_size': 200 is not a positive multiple of 128");
}

TEST(ReplayHostile, TooManyLayersAreRejected) {
  CaptureCopy c;
  c.edit_manifest([](json& m) {
    m["schedule"]["compress_ratios"] = std::vector<int>(5000, 0);
    m["c4a_layers"] = json::array();
  });
  const CliRun r = c.replay();
  EXPECT_EQ(r.code, kExitInvalidInput);
  EXPECT_CONTAINS(r.err, "5000 layers, above the limit of 1024 (max_layers");
}

}  // namespace
}  // namespace dsv4::harness::testing
