// c10/core/Device.h — stub for kevo's tests (tests/torch/stub/README.md):
// c10::DeviceType (a subset of PyTorch 2.x's members; nothing here relies
// on their values), c10::DeviceIndex and c10::Device.
#pragma once

#include <cstdint>

#include <c10/macros/Macros.h>

namespace c10 {

enum class DeviceType : int8_t {
    CPU,
    CUDA,
    HIP,
    XLA,
    MPS,
    Meta,
    PrivateUse1,
};

// -1: the current device of the type.
using DeviceIndex = int8_t;

struct Device final {
    /* implicit */ Device(DeviceType type, DeviceIndex index = -1);
    bool operator==(const Device &other) const noexcept;
    bool operator!=(const Device &other) const noexcept;
    DeviceType type() const noexcept;
    DeviceIndex index() const noexcept;
};

} // namespace c10
