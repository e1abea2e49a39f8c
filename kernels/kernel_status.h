// What a kernel launcher returns: success, or the failing CUDA call with its site. Launchers
// never throw and never hide an error; the host API boundary turns a failure into an exception.
#pragma once

namespace dsv4::kernels {

struct KernelStatus {
  int code = 0;                // cudaError_t; 0 = cudaSuccess
  const char* call = nullptr;  // the failing call, e.g. "mixed_sparse_indices_kernel<<<>>>"
  const char* file = nullptr;
  int line = 0;
  bool ok() const { return code == 0; }
};

}  // namespace dsv4::kernels
