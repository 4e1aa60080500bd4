// c10/util/ArrayRef.h — stub for kevo's tests (tests/torch/stub/README.md):
// c10::ArrayRef (a non-owning view of an array) and IntArrayRef, as in PyTorch 2.x.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace c10 {

template <typename T>
class ArrayRef final {
  public:
    using value_type = T;
    using size_type = size_t;

    ArrayRef();
    /* implicit */ ArrayRef(const T &OneElt);
    ArrayRef(const T *data, size_t length);
    template <typename A>
    /* implicit */ ArrayRef(const std::vector<T, A> &Vec);
    /* implicit */ ArrayRef(const std::initializer_list<T> &Vec);

    const T *begin() const;
    const T *end() const;
    const T *data() const;
    size_t size() const;
    bool empty() const;
    const T &operator[](size_t Index) const;
    bool equals(ArrayRef RHS) const;
};

template <typename T>
bool operator==(ArrayRef<T> a1, ArrayRef<T> a2)
{
    return a1.equals(a2);
}

template <typename T>
bool operator!=(ArrayRef<T> a1, ArrayRef<T> a2)
{
    return !a1.equals(a2);
}

using IntArrayRef = ArrayRef<int64_t>;

} // namespace c10
