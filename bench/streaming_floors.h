// The measured floors of the benchmarks: streaming kernels that move exactly a build's (or a
// step's builds') bytes, timed as the builds are, so that no build of those bytes can beat
// them as timed; with chains, every write after the dependent reads a build cannot avoid.
// Declared in every build; without CUDA (gpu_timing_host.cpp) every call throws
// std::runtime_error.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dsv4::bench {

// A streaming kernel's shape: 16-byte words a thread, threads a CTA.
struct StreamingShape {
  int words = 1;
  int threads = 256;
  std::string name() const { return "w" + std::to_string(words) + "t" + std::to_string(threads); }
};

// The byte floor of a build, measured: a streaming kernel that reads `read_bytes` from one
// buffer and writes `write_bytes` to another in 16-byte words (the word read is the word
// written, so neither is optimized away), one-shot grid (no grid-stride loop), each thread
// `words` consecutive-by-CTA words, launched like the builder. No build can move the same
// bytes in less time than the fastest of its shapes (CTAs of 256 threads, and of one warp,
// which spread a small build over more SMs, as a decode build's CTA a row does): the kernel
// benchmark's cuda/byte_floor/<model>/<kind>/<case> times it on each case's bytes
// (build_bytes.h).
// With hops = 1 or 2 each thread's writes wait for that many dependent reads (the 8-byte plan
// entry of the row its first word falls in, read first, then a table entry the plan entry
// names), as a planned build's outputs wait on plan -> block table (cuda/chain_floor/<hops>/...):
// the floor of the same bytes for a kernel whose every write needs its row's plan entry (1,
// every build) or that and a table entry (2, every translated column). Its rows are the largest
// power of two <= row_words (a shift): at most twice as many plan entries as the build's rows.
// hops = kTranslated (cuda/translated_floor/...): the 2-read chain, and each of the first
// `translated_bytes` read (a build's translated inputs, BuildBytes::translated_inputs) written
// only after one more table entry, named by the word's own first value: a translated column
// knows its table entry only once its input is read, so a word of them waits on input -> table,
// one entry a 16-byte word at the least (four indices may share a block).
// hops = kLookups (cuda/lookup_floor/..., C4A builds): the translated floor with a table entry a
// translated index instead of a word, as a C4A row's picks (four to a word, rarely in one
// block) need: each of a translated word's four values adds the entry its low bits name in a
// table of `lookup_entries` (a power of two: the build's block-table row, rounded up). Its
// inputs are a hash of their place, not the 0x3c fill, so the lookups spread over the table as
// a top-k's picks spread over its request's blocks. Every value is read, looked up and written
// as the build's are; nothing is checked, masked or computed besides.
class StreamingBytes {
 public:
  static constexpr StreamingShape kShapes[6] = {{1, 256}, {2, 256}, {4, 256}, {1, 32}, {2, 32}, {4, 32}};
  static constexpr int kTranslated = 3;
  static constexpr int kLookups = 4;
  static constexpr int kMaxHops = kLookups;
  static constexpr int32_t kMaxLookupEntries = 1 << 16;
  StreamingBytes() = default;
  ~StreamingBytes();
  StreamingBytes(const StreamingBytes&) = delete;
  StreamingBytes& operator=(const StreamingBytes&) = delete;
  // Grows the buffers (synchronously) to hold the sizes; call before timing.
  void reserve(int64_t read_bytes, int64_t write_bytes);
  // One launch on `stream`; shape one of kShapes, hops 0 to kMaxHops, row_words >= 1 (the
  // chained kernel's row), translated_bytes <= read_bytes (kTranslated, kLookups),
  // lookup_entries a power of two <= kMaxLookupEntries (kLookups); the sizes within reserve()'s.
  void launch(void* stream, int64_t read_bytes, int64_t write_bytes, StreamingShape shape, int hops = 0,
              int64_t row_words = 1, int64_t translated_bytes = 0, int32_t lookup_entries = 1);

 private:
  void* src_ = nullptr;
  void* spread_src_ = nullptr;  // src_'s size, each int32 a hash of its place (kLookups)
  void* dst_ = nullptr;
  int64_t src_bytes_ = 0, dst_bytes_ = 0;
  void* plan_ = nullptr;   // int2 entries (chained kernel)
  void* table_ = nullptr;  // int32 entries, zero (kMaxLookupEntries)
  int64_t plan_entries_ = 0;
};

// The byte floor of a whole step, measured: StreamingBytes' kernel launched once per build of
// the step, each moving that build's bytes (its own inputs from its input region, the step's
// metadata and tables from one region all builds share, its outputs to its output region),
// back to back on the stream with programmatic dependent launch as the builder launches. Builds
// with the same region id use the same buffer (a C4A layer's own indexer output; a tail-only
// step's one combined output), so what the L2 keeps between builds is what it keeps in the step.
// With hops (StreamingBytes' chains), every build's writes wait on its rows' plan entries
// (rows of row_words words; one plan all builds share, as a step's token plan) and table entries;
// with kTranslated, the first translated_read_bytes of its own inputs also on a table entry each.
// The chains' row width of a build writing `write_bytes` over `rows` rows: its output words a
// row, at least one (a build of lengths only writes less than a word a row).
inline int64_t row_words_of(int64_t write_bytes, int64_t rows) {
  const int64_t words = (write_bytes + 15) / 16;
  return rows < 1 || words < rows ? 1 : words / rows;
}

struct StreamedBuild {
  int64_t own_read_bytes = 0;     // from region `input`
  int64_t translated_read_bytes = 0;  // the first of own_read_bytes, translated (kTranslated)
  int64_t shared_read_bytes = 0;  // from the region every build shares
  int64_t write_bytes = 0;        // to region `output`
  int input = 0, output = 0;      // region ids >= 0
  int64_t row_words = 1;          // the build's output words a row (the chains' rows), >= 1
};
class StreamingSequence {
 public:
  explicit StreamingSequence(std::vector<StreamedBuild> builds);  // allocates every region
  ~StreamingSequence();
  StreamingSequence(const StreamingSequence&) = delete;
  StreamingSequence& operator=(const StreamingSequence&) = delete;
  // Every build in order; shape one of StreamingBytes::kShapes, hops 0 to kTranslated.
  void launch(void* stream, StreamingShape shape, int hops = 0);
  size_t size() const { return builds_.size(); }

 private:
  void release();
  std::vector<StreamedBuild> builds_;
  std::vector<void*> inputs_, outputs_;
  void* shared_ = nullptr;
  void* sink_ = nullptr;
  void* plan_ = nullptr;   // the chains' plan and table (StreamingBytes')
  void* table_ = nullptr;
};

}  // namespace dsv4::bench
