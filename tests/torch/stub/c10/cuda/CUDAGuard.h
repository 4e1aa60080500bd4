// c10/cuda/CUDAGuard.h — stub for kevo's tests (tests/torch/stub/README.md):
// c10::cuda::CUDAGuard, which sets the current CUDA device for its scope
// (PyTorch 2.x: constructible from a Device or a DeviceIndex only, neither
// copied nor moved).
#pragma once

#include <c10/core/Device.h>
#include <c10/macros/Macros.h>

namespace c10::cuda {

struct CUDAGuard {
    explicit CUDAGuard() = delete;
    explicit CUDAGuard(DeviceIndex device_index);
    explicit CUDAGuard(Device device);
    CUDAGuard(const CUDAGuard &) = delete;
    CUDAGuard &operator=(const CUDAGuard &) = delete;
    CUDAGuard(CUDAGuard &&other) = delete;
    CUDAGuard &operator=(CUDAGuard &&other) = delete;
    ~CUDAGuard();
};

} // namespace c10::cuda
