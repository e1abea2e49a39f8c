// One source for the host backend (plain g++) and the CUDA kernels (nvcc): row logic is
// written once as DSV4_HD functions.
#pragma once

#if defined(__CUDACC__)
#define DSV4_HD __host__ __device__
#define DSV4_INLINE __forceinline__
#else
#define DSV4_HD
#define DSV4_INLINE inline
#endif

// Unroll hint for the device pass only (the host compiler would warn on the pragma).
#if defined(__CUDA_ARCH__)
#define DSV4_UNROLL _Pragma("unroll")
#define DSV4_NO_UNROLL _Pragma("unroll 1")  // cold loops: keep the kernel's code small
#else
#define DSV4_UNROLL
#define DSV4_NO_UNROLL
#endif
