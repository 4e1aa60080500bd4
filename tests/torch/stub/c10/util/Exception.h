// c10/util/Exception.h — stub for kevo's tests (tests/torch/stub/README.md):
// TORCH_CHECK and TORCH_WARN.
//
// Narrower than PyTorch on purpose: PyTorch's macros take any number of
// streamable message arguments (formatted by c10::str); these take exactly
// one C string.  The binding formats its messages with snprintf (c10's
// stream formatting crashed in it on the device machine: see
// export/template/torch/torch.cpp.in), so a streamed message is a
// regression this check reports.
#pragma once

#include <cstdint>

#include <c10/macros/Macros.h>

namespace c10 {

struct SourceLocation {
    const char *function;
    const char *file;
    uint32_t line;
};

struct UserWarning {};

class Warning {
  public:
    Warning(UserWarning type, SourceLocation source_location, const char *msg, bool verbatim);
};

// Reports a warning to the current warning handler (Python's, in a module).
void warn(const Warning &warning);

namespace detail {
[[noreturn]] void torchCheckFail(const char *func, const char *file, uint32_t line, const char *msg);
} // namespace detail

} // namespace c10

#define TORCH_CHECK(cond, msg)                                                                                         \
    if (!(cond)) {                                                                                                     \
        ::c10::detail::torchCheckFail(__func__, __FILE__, static_cast<uint32_t>(__LINE__), msg);                       \
    }

#define TORCH_WARN(msg)                                                                                                \
    ::c10::warn(::c10::Warning(::c10::UserWarning(), {__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, msg, false))
