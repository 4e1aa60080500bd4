// ATen/cuda/CUDAContext.h — stub for kevo's tests (tests/torch/stub/README.md):
// ATen's CUDA context; the binding takes at::cuda::getCurrentCUDAStream
// from it (c10::cuda's, reachable as at::cuda::).
#pragma once

#include <cuda_runtime_api.h>

#include <c10/cuda/CUDAStream.h>
#include <c10/macros/Macros.h>
