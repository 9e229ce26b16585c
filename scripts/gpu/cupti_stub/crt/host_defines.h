/* Stand-in for nvcc's crt/host_defines.h, enough for a C compiler to read CUPTI's headers
 * (scripts/gpu/cupti_bare.c) where no CUDA toolkit is installed: CUPTI_STUB=scripts/gpu/cupti_stub. */
#pragma once
#define __host__
#define __device__
#define __global__
#define __shared__
#define __constant__
#define __device_builtin__
#define __device_builtin_texture_type__
#define __device_builtin_surface_type__
#define __cudart_builtin__
#define __align__(n) __attribute__((aligned(n)))
#define __builtin_align__(a) __align__(a)
#define CUDARTAPI
#define CUDARTAPI_CDECL
#define __forceinline__ inline __attribute__((always_inline))
#define __inline__ inline
#define __specialization_static
#define __CUDA_ALIGN__(n) __attribute__((aligned(n)))
