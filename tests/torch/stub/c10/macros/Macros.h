// c10/macros/Macros.h — stub for kevo's tests (tests/torch/stub/README.md):
// the PyTorch 2.x macros and namespace aliases the generated binding relies on.
#pragma once

#define C10_CONCATENATE_IMPL(s1, s2) s1##s2
#define C10_CONCATENATE(s1, s2) C10_CONCATENATE_IMPL(s1, s2)
#define C10_STRINGIZE_IMPL(x) #x
#define C10_STRINGIZE(x) C10_STRINGIZE_IMPL(x)
// A number unique in the translation unit.
#define C10_UID __COUNTER__

// c10's names are reachable as at:: names, c10::cuda's as at::cuda:: names.
namespace c10 {}
namespace c10::cuda {}
namespace at {
using namespace c10;
}
namespace at::cuda {
using namespace c10::cuda;
}
