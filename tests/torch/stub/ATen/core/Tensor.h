// ATen/core/Tensor.h — stub for kevo's tests (tests/torch/stub/README.md):
// at::Tensor with the members the generated binding uses, each with its
// PyTorch 2.x signature (pytorch.org/cppdocs, class at::Tensor and its base
// at::TensorBase).  No catch-all overloads: a misspelled member, a wrong
// argument count or type fails to compile, as it would against PyTorch.
#pragma once

#include <cstdint>
#include <type_traits>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <c10/core/TensorOptions.h>
#include <c10/macros/Macros.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/Optional.h>

namespace at {

namespace detail {
// The element types PyTorch instantiates Tensor::data_ptr<T>() for (a
// subset: no complex, quantized or float8 types); any other T is
// undefined there at link time and refused here at compile time.
template <typename T>
struct is_data_ptr_type : std::false_type {};
template <> struct is_data_ptr_type<bool> : std::true_type {};
template <> struct is_data_ptr_type<uint8_t> : std::true_type {};
template <> struct is_data_ptr_type<int8_t> : std::true_type {};
template <> struct is_data_ptr_type<int16_t> : std::true_type {};
template <> struct is_data_ptr_type<int32_t> : std::true_type {};
template <> struct is_data_ptr_type<int64_t> : std::true_type {};
template <> struct is_data_ptr_type<uint16_t> : std::true_type {};
template <> struct is_data_ptr_type<uint32_t> : std::true_type {};
template <> struct is_data_ptr_type<uint64_t> : std::true_type {};
template <> struct is_data_ptr_type<float> : std::true_type {};
template <> struct is_data_ptr_type<double> : std::true_type {};
template <> struct is_data_ptr_type<c10::Half> : std::true_type {};
template <> struct is_data_ptr_type<c10::BFloat16> : std::true_type {};
} // namespace detail

class Tensor {
  public:
    Tensor();
    Tensor(const Tensor &tensor);
    Tensor(Tensor &&tensor) noexcept;
    Tensor &operator=(const Tensor &x) &;
    Tensor &operator=(Tensor &&x) &;
    ~Tensor();

    // Shape, layout, type, place.
    int64_t dim() const;
    int64_t size(int64_t dim) const;
    int64_t stride(int64_t dim) const;
    IntArrayRef sizes() const;
    ScalarType scalar_type() const;
    Device device() const;
    TensorOptions options() const;
    bool is_cuda() const;
    bool is_contiguous(MemoryFormat memory_format = MemoryFormat::Contiguous) const;

    // The first element's address.
    void *data_ptr() const;
    template <typename T>
    T *data_ptr() const
    {
        static_assert(detail::is_data_ptr_type<T>::value, "Tensor::data_ptr<T>: T is not an element type of PyTorch");
        return static_cast<T *>(data_ptr());
    }

    // Views and copies.
    Tensor contiguous(MemoryFormat memory_format = MemoryFormat::Contiguous) const;
    Tensor transpose(int64_t dim0, int64_t dim1) const;
    Tensor index_select(int64_t dim, const Tensor &index) const;
    Tensor to(TensorOptions options = {}, bool non_blocking = false, bool copy = false,
              optional<MemoryFormat> memory_format = nullopt) const;
    Tensor to(Device device, ScalarType dtype, bool non_blocking = false, bool copy = false,
              optional<MemoryFormat> memory_format = nullopt) const;
    Tensor to(ScalarType dtype, bool non_blocking = false, bool copy = false,
              optional<MemoryFormat> memory_format = nullopt) const;
    Tensor to(const Tensor &other, bool non_blocking = false, bool copy = false,
              optional<MemoryFormat> memory_format = nullopt) const;
};

} // namespace at
