// Division of non-negative int32 values by a runtime divisor with a multiply-high and a shift
// (the round-up method of Granlund & Montgomery, as in CUTLASS FastDivmod). Block sizes are
// only known at run time, and a hardware-less integer division costs ~20 instructions per
// slot lookup on the GPU.
#pragma once
#include <cstdint>

#include "kernels/host_device.h"

namespace dsv4::kernels {

struct FastDivider {
  uint32_t divisor;     // >= 1
  uint32_t multiplier;  // ceil(2^(31 + ceil(log2 divisor)) / divisor); unused for divisor 1
  uint32_t shift;       // ceil(log2 divisor) - 1

  // Host only; divisor >= 1 (callers validate block sizes first).
  static FastDivider make(int32_t divisor) {
    const uint32_t d = divisor < 1 ? 1u : static_cast<uint32_t>(divisor);
    uint32_t log2_ceil = 0;
    while ((uint64_t{1} << log2_ceil) < d) ++log2_ceil;
    if (d == 1) return FastDivider{1, 0, 0};
    const uint64_t p = 31 + log2_ceil;
    const uint64_t m = ((uint64_t{1} << p) + d - 1) / d;
    return FastDivider{d, static_cast<uint32_t>(m), static_cast<uint32_t>(p - 32)};
  }

  // Exact floor(n / divisor) for every n < 2^31.
  DSV4_HD DSV4_INLINE uint32_t divide(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t high = __umulhi(n, multiplier);
#else
    const uint32_t high = static_cast<uint32_t>((uint64_t{n} * multiplier) >> 32);
#endif
    return divisor == 1 ? n : high >> shift;
  }
};

}  // namespace dsv4::kernels
