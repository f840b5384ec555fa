#pragma once
// OVERLAPSIM_HD: a function compiled for host and device under nvcc (force-inlined there)
// and plain inline in C++, for code shared verbatim by kernels and host references.
#if defined(__CUDACC__)
#define OVERLAPSIM_HD __host__ __device__ __forceinline__
#else
#define OVERLAPSIM_HD inline
#endif
