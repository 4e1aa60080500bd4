// torch/library.h — stub for kevo's tests (tests/torch/stub/README.md):
// torch::Library and the TORCH_LIBRARY_FRAGMENT / TORCH_LIBRARY_IMPL
// macros, as in PyTorch 2.x: each macro declares a static function taking
// a torch::Library &, registers it through a static
// torch::detail::TorchLibraryInit, and opens its definition.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/DispatchKey.h>
#include <c10/macros/Macros.h>
#include <c10/util/Optional.h>

namespace at {
// Operator tags (a few of PyTorch's).
enum class Tag { core, data_dependent_output, dynamic_output_shape, needs_fixed_stride_order, pt2_compliant_tag };
} // namespace at

namespace torch {

enum class _RegisterOrVerify { REGISTER, VERIFY };

namespace detail {
// What PyTorch's kernel registration accepts, checked at compile time there
// too (infer_schema and the boxing wrappers): tensors, int64_t, double,
// bool, ScalarType, int arrays and optionals of those, by value or const
// reference, and a mutable Tensor & for in-place kernels; not int, float
// or other C++ types, for which PyTorch asks for int64_t and double.  A
// subset of its list: enough for the binding's kernels.
template <typename T>
struct is_kernel_value : std::false_type {};
template <> struct is_kernel_value<at::Tensor> : std::true_type {};
template <> struct is_kernel_value<int64_t> : std::true_type {};
template <> struct is_kernel_value<double> : std::true_type {};
template <> struct is_kernel_value<bool> : std::true_type {};
template <> struct is_kernel_value<c10::ScalarType> : std::true_type {};
template <> struct is_kernel_value<c10::IntArrayRef> : std::true_type {};
template <typename T>
struct is_kernel_value<c10::optional<T>> : is_kernel_value<T> {};

template <typename T>
struct is_kernel_arg : is_kernel_value<T> {};
template <typename T>
struct is_kernel_arg<const T &> : is_kernel_value<T> {};
template <>
struct is_kernel_arg<at::Tensor &> : std::true_type {};

template <typename T>
struct is_kernel_return : is_kernel_value<T> {};
template <>
struct is_kernel_return<void> : std::true_type {};
template <>
struct is_kernel_return<at::Tensor &> : std::true_type {};
template <typename... T>
struct is_kernel_return<std::tuple<T...>> : std::conjunction<is_kernel_value<T>...> {};
} // namespace detail

class Library final {
  public:
    enum Kind { DEF, IMPL, FRAGMENT };

    Library(Kind kind, std::string ns, c10::optional<c10::DispatchKey> k, const char *file, uint32_t line);
    Library(const Library &) = delete;
    Library &operator=(const Library &) = delete;
    Library(Library &&);
    Library &operator=(Library &&);
    ~Library();

    // Declares an operator by its schema, e.g. "add(Tensor self, Tensor other) -> Tensor".
    Library &def(const char *raw_schema, const std::vector<at::Tag> &tags = {},
                 _RegisterOrVerify rv = _RegisterOrVerify::REGISTER) &;

    // Registers raw_f as the kernel of operator name for the block's dispatch key.
    template <typename R, typename... Args>
    Library &impl(const char *name, R (*raw_f)(Args...), _RegisterOrVerify rv = _RegisterOrVerify::REGISTER) &
    {
        static_assert(detail::is_kernel_return<R>::value,
                      "torch::Library::impl: the kernel's return type is not one the dispatcher takes");
        static_assert(std::conjunction<detail::is_kernel_arg<Args>...>::value,
                      "torch::Library::impl: a kernel argument type is not one the dispatcher takes "
                      "(int64_t and double, not int and float)");
        (void)name;
        (void)raw_f;
        (void)rv;
        return *this;
    }
};

namespace detail {
class TorchLibraryInit final {
  public:
    using InitFn = void(Library &);
    TorchLibraryInit(Library::Kind kind, InitFn *fn, const char *ns, c10::optional<c10::DispatchKey> k,
                     const char *file, uint32_t line);
};
} // namespace detail

} // namespace torch

// TORCH_LIBRARY_FRAGMENT(ns, m) { m.def(...); }: operators defined in
// namespace ns, which other fragments may extend.
#define TORCH_LIBRARY_FRAGMENT(ns, m) _TORCH_LIBRARY_FRAGMENT(ns, m, C10_UID)
#define _TORCH_LIBRARY_FRAGMENT(ns, m, uid)                                                                            \
    static void C10_CONCATENATE(TORCH_LIBRARY_FRAGMENT_init_##ns##_, uid)(torch::Library &);                          \
    static const torch::detail::TorchLibraryInit C10_CONCATENATE(TORCH_LIBRARY_FRAGMENT_static_init_##ns##_, uid)(    \
        torch::Library::FRAGMENT, &C10_CONCATENATE(TORCH_LIBRARY_FRAGMENT_init_##ns##_, uid), #ns, c10::nullopt,       \
        __FILE__, __LINE__);                                                                                           \
    void C10_CONCATENATE(TORCH_LIBRARY_FRAGMENT_init_##ns##_, uid)(torch::Library & m)

// TORCH_LIBRARY_IMPL(ns, k, m) { m.impl(...); }: kernels of namespace ns's
// operators for dispatch key k (an unqualified member of c10::DispatchKey).
#define TORCH_LIBRARY_IMPL(ns, k, m) _TORCH_LIBRARY_IMPL(ns, k, m, C10_UID)
#define _TORCH_LIBRARY_IMPL(ns, k, m, uid)                                                                             \
    static void C10_CONCATENATE(TORCH_LIBRARY_IMPL_init_##ns##_##k##_, uid)(torch::Library &);                        \
    static const torch::detail::TorchLibraryInit C10_CONCATENATE(TORCH_LIBRARY_IMPL_static_init_##ns##_##k##_, uid)(  \
        torch::Library::IMPL, &C10_CONCATENATE(TORCH_LIBRARY_IMPL_init_##ns##_##k##_, uid), #ns,                       \
        c10::make_optional(c10::DispatchKey::k), __FILE__, __LINE__);                                                  \
    void C10_CONCATENATE(TORCH_LIBRARY_IMPL_init_##ns##_##k##_, uid)(torch::Library & m)
