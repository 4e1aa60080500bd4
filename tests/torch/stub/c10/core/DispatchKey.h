// c10/core/DispatchKey.h — stub for kevo's tests (tests/torch/stub/README.md):
// c10::DispatchKey, the keys a TORCH_LIBRARY_IMPL block names (a subset of
// PyTorch 2.x's enum; the values here are not PyTorch's).
#pragma once

#include <cstdint>

#include <c10/macros/Macros.h>

namespace c10 {

enum class DispatchKey : uint16_t {
    Undefined = 0,
    CPU,
    CUDA,
    HIP,
    XLA,
    MPS,
    Meta,
    PrivateUse1,
    BackendSelect,
    Python,
    Autograd,
    AutogradCPU,
    AutogradCUDA,
    CompositeImplicitAutograd,
    CompositeExplicitAutograd,
    CompositeExplicitAutogradNonFunctional,
};

} // namespace c10
