// c10/core/TensorOptions.h — stub for kevo's tests (tests/torch/stub/README.md):
// c10::MemoryFormat and c10::TensorOptions (the members the binding uses;
// PyTorch 2.x signatures).
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Optional.h>

namespace c10 {

enum class MemoryFormat : int8_t { Contiguous, Preserve, ChannelsLast, ChannelsLast3d, NumOptions };

struct TensorOptions {
    TensorOptions();
    /* implicit */ TensorOptions(ScalarType dtype);
    /* implicit */ TensorOptions(Device device);
    /* implicit */ TensorOptions(MemoryFormat memory_format);

    // A copy with the dtype set.
    [[nodiscard]] TensorOptions dtype(optional<ScalarType> dtype) const noexcept;
};

} // namespace c10
