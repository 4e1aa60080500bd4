// ATen/ATen.h — stub for kevo's tests: the PyTorch 2.x C++ API that
// `kevo export --torch`'s binding (export/template/torch/torch.cpp.in and
// kernels/<op>/export/torch.cpp.in) uses, declared so that test_export can
// compile the generated binding with g++ -fsyntax-only where PyTorch is not
// installed.  Written from the public API documentation, not copied from
// PyTorch; see tests/torch/stub/README.md.
//
// This header: at::Tensor and the ATen functions the binding calls.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

namespace at {

Tensor empty(IntArrayRef size, TensorOptions options = {}, optional<MemoryFormat> memory_format = nullopt);
Tensor empty_like(const Tensor &self, TensorOptions options = {}, optional<MemoryFormat> memory_format = nullopt);
Tensor matmul(const Tensor &self, const Tensor &other);
Tensor scaled_dot_product_attention(const Tensor &query, const Tensor &key, const Tensor &value,
                                    const optional<Tensor> &attn_mask = {}, double dropout_p = 0.0,
                                    bool is_causal = false, optional<double> scale = nullopt,
                                    bool enable_gqa = false);

Tensor operator+(const Tensor &self, const Tensor &other);

} // namespace at
