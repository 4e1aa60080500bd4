// c10/core/ScalarType.h — stub for kevo's tests (tests/torch/stub/README.md):
// c10::ScalarType (the common members of PyTorch 2.x's enum; nothing here
// relies on their numeric values), its k* constants and toString.
#pragma once

#include <cstdint>

#include <c10/macros/Macros.h>

namespace c10 {

struct Half;
struct BFloat16;

enum class ScalarType : int8_t {
    Byte,
    Char,
    Short,
    Int,
    Long,
    Half,
    Float,
    Double,
    ComplexHalf,
    ComplexFloat,
    ComplexDouble,
    Bool,
    QInt8,
    QUInt8,
    QInt32,
    BFloat16,
    Float8_e5m2,
    Float8_e4m3fn,
    UInt16,
    UInt32,
    UInt64,
    Undefined,
};

constexpr ScalarType kByte = ScalarType::Byte;
constexpr ScalarType kChar = ScalarType::Char;
constexpr ScalarType kShort = ScalarType::Short;
constexpr ScalarType kInt = ScalarType::Int;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kComplexHalf = ScalarType::ComplexHalf;
constexpr ScalarType kComplexFloat = ScalarType::ComplexFloat;
constexpr ScalarType kComplexDouble = ScalarType::ComplexDouble;
constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kFloat8_e5m2 = ScalarType::Float8_e5m2;
constexpr ScalarType kFloat8_e4m3fn = ScalarType::Float8_e4m3fn;
constexpr ScalarType kUInt16 = ScalarType::UInt16;
constexpr ScalarType kUInt32 = ScalarType::UInt32;
constexpr ScalarType kUInt64 = ScalarType::UInt64;

// The type's name ("Half", "BFloat16", ...).
const char *toString(ScalarType t);

} // namespace c10
