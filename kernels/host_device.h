// One source for the host backend (plain g++) and the CUDA kernels (nvcc): row logic is
// written once as DSV4_HD functions.
#pragma once

#if defined(__CUDACC__)
#define DSV4_HD __host__ __device__
#define DSV4_INLINE __forceinline__
#define DSV4_UNROLL _Pragma("unroll")
#else
#define DSV4_HD
#define DSV4_INLINE inline
#define DSV4_UNROLL
#endif
