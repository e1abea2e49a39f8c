// Tensors across the boundary, zero-copy: arguments are viewed in place (DLPack), outputs are
// handed back in the inputs' framework (numpy in -> numpy out, torch in -> torch out).
#pragma once
#include <nanobind/ndarray.h>

#include <array>
#include <cstdint>
#include <memory>

#include "dlpack_exchange.h"
#include "optimized/build_request.h"

namespace dsv4::py {

namespace nb = nanobind;

// Where a call's tensors live, and how to hand outputs back to their framework.
struct Placement {
  dlpack::Device device{dlpack::kCPU, 0};
  const dlpack::ExchangeApi* api = nullptr;  // the framework's C exchange table (torch), if any
  PyTypeObject* type = nullptr;  // the inputs' array type (query_start_loc's): their framework
  bool cuda() const { return device.device_type == dlpack::kCUDA; }
};

// One argument seen through DLPack, valid while the call runs (the caller holds the object).
struct ArrayView {
  const char* name = "";
  void* data = nullptr;
  int32_t ndim = 0;
  int64_t shape[2] = {0, 0};
  int64_t strides[2] = {0, 0};  // elements
  dlpack::DataType dtype{};
  dlpack::Device device{};
};

// Reads a call's array arguments. Objects whose type publishes the DLPack C exchange API are
// viewed through it (~0.1 us); anything else through nanobind (buffer protocol, __dlpack__),
// whose imports this reader keeps alive until it is destroyed.
class ArrayReader {
 public:
  // TypeError naming `name` when `obj` is not an array of rank 1 or 2.
  ArrayView view(nb::handle obj, const char* name) { return view(obj, name, false); }
  // An array to write into: ValueError when it is read-only (numpy's writeable flag, a DLPack
  // read-only export). Tensors viewed through an exchange table (torch) are writable.
  ArrayView view_writable(nb::handle obj, const char* name) { return view(obj, name, true); }
  // The exchange table of obj's type, or null (cached per type).
  static const dlpack::ExchangeApi* exchange_api(nb::handle obj);

 private:
  ArrayView view(nb::handle obj, const char* name, bool writable);
  std::array<nb::ndarray<nb::ro>, 24> kept_;
  size_t kept_count_ = 0;
};

// Typed views: dtype (TypeError), rank and layout (ValueError), all naming the argument; the
// device must equal `place.device` (ValueError). `place` is set by the first argument read.
opt::Int32Matrix int32_matrix(const ArrayView& a, const Placement& place);  // column stride 1
const int32_t* int32_vector(const ArrayView& a, const Placement& place, int64_t expected_size,
                            const char* expected);                       // contiguous, of that size
const int32_t* int32_dense(const ArrayView& a, const Placement& place);  // C-contiguous matrix
const uint8_t* bool_vector(const ArrayView& a, const Placement& place, int64_t expected_size,
                           const char* expected);  // bool or uint8
// The device of `a`, checked against the step's: CPU (host memory) or CUDA.
void check_device(const ArrayView& a, const Placement& place);
// A host copy (`*_cpu` argument): a contiguous int32 vector in host memory.
const int32_t* host_int32_vector(const ArrayView& a, int64_t expected_size, const char* expected);

// build(out=...): the caller's arrays as SPEC §7 caller-owned outputs. T_cap is the rows of
// sparse_indices and P_cap its columns minus W; the build writes every element of both.
struct CallerOutputs {
  nb::handle sparse_indices, sparse_lens;  // the caller's objects, handed back as they are
  opt::OutputView view;                    // sparse_indices null: nothing to write (T_cap = 0)
  int32_t row_capacity = 0;                // T_cap
  int32_t compressed_capacity = 0;         // P_cap
};
// Checks all that the build relies on, naming out[0] (sparse_indices) or out[1] (sparse_lens):
// a pair of writable int32 arrays of the inputs' framework (TypeError) and device; indices
// [T_cap >= T][W + P_cap >= W + P], column stride 1, a row stride that is a multiple of 4 and
// 16-byte aligned data; lens [T_cap], contiguous (ValueError). `width` = W + P.
CallerOutputs caller_outputs(ArrayReader& reader, nb::handle out, const Placement& place, int32_t num_tokens,
                             int32_t window, int64_t width);

// Hands builder memory to Python without a copy: an int32 array of `shape` (rank 1 or 2) in the
// framework of `place`, holding `owner` until the array (and every view of it) is gone.
nb::object export_int32(const Placement& place, int32_t* data, int32_t ndim, const int64_t* shape,
                        std::shared_ptr<void> owner);

// The CUDA stream of the call: `stream` as a cudaStream_t address, or, when None, the
// framework's current stream (torch.cuda.current_stream()) and else the legacy default stream.
void* call_stream(nb::handle stream, const Placement& place);

}  // namespace dsv4::py
