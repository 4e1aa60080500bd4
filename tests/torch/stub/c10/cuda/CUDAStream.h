// c10/cuda/CUDAStream.h — stub for kevo's tests (tests/torch/stub/README.md):
// c10::cuda::CUDAStream and the current stream, as in PyTorch 2.x.
#pragma once

#include <cuda_runtime_api.h>

#include <c10/core/Device.h>
#include <c10/macros/Macros.h>

namespace c10::cuda {

class CUDAStream {
  public:
    CUDAStream() = delete;
    // The CUDA runtime's handle of the stream.
    cudaStream_t stream() const;
    operator cudaStream_t() const;
};

// The current stream of the device (-1: of the current device).
CUDAStream getCurrentCUDAStream(DeviceIndex device_index = -1);

} // namespace c10::cuda
