// c10/util/Optional.h — stub for kevo's tests (tests/torch/stub/README.md):
// in PyTorch 2.x c10::optional is std::optional.
#pragma once

#include <optional>

namespace c10 {
using std::make_optional;
using std::nullopt;
using std::nullopt_t;
using std::optional;
} // namespace c10
