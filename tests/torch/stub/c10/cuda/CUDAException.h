// c10/cuda/CUDAException.h — stub for kevo's tests (tests/torch/stub/README.md):
// C10_CUDA_CHECK, which takes an expression of type cudaError_t.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <c10/util/Exception.h>

namespace c10::cuda {
void c10_cuda_check_implementation(const int32_t err, const char *filename, const char *function_name,
                                   const uint32_t line_number, const bool include_device_assertions);
} // namespace c10::cuda

#define C10_CUDA_CHECK(EXPR)                                                                                           \
    do {                                                                                                               \
        const cudaError_t c10_cuda_err_ = EXPR;                                                                        \
        ::c10::cuda::c10_cuda_check_implementation(static_cast<int32_t>(c10_cuda_err_), __FILE__, __func__,           \
                                                   static_cast<uint32_t>(__LINE__), true);                             \
    } while (0)
