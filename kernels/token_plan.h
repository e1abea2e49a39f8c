// The per-step token plan (issue 8): what a prefill row's columns need from the step's
// metadata, its request and its position (SPEC §2), the same for every layer of a step. The
// step's first build works them out (token_to_req -> query_start_loc, seq_lens: two dependent
// reads) and writes them; the step's later builds read one entry instead, so that a row's
// first table read waits on one read, not two.
#pragma once
#include <cstdint>

#include "kernels/host_device.h"

namespace dsv4::kernels {

struct alignas(8) TokenPlanEntry {
  int32_t request;   // token_to_req[t]
  int32_t position;  // pos(t) = seq_lens[r] - query length + offset in the request
};

// One 8-byte read through the read-only data cache.
DSV4_HD DSV4_INLINE TokenPlanEntry load_plan_entry(const TokenPlanEntry* p) {
#if defined(__CUDA_ARCH__)
  const int2 v = __ldg(reinterpret_cast<const int2*>(p));
  return TokenPlanEntry{v.x, v.y};
#else
  return *p;
#endif
}

}  // namespace dsv4::kernels
