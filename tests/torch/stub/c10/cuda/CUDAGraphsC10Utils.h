// c10/cuda/CUDAGraphsC10Utils.h — stub for kevo's tests
// (tests/torch/stub/README.md): whether the current stream is capturing a
// CUDA graph, as in PyTorch 2.x.
#pragma once

#include <cuda_runtime_api.h>

#include <c10/cuda/CUDAStream.h>

namespace c10::cuda {

enum class CaptureStatus : int {
    None = int(cudaStreamCaptureStatusNone),
    Active = int(cudaStreamCaptureStatusActive),
    Invalidated = int(cudaStreamCaptureStatusInvalidated),
};

// The current stream's capture status (creates the device's context if
// there is none).
CaptureStatus currentStreamCaptureStatusMayInitCtx();

} // namespace c10::cuda
