#pragma once
// Element types of the kernels' inputs and outputs. C++17 (included by .cu files).
#include <cstddef>
#include <optional>
#include <string_view>

namespace overlapsim::kernels {

enum class DType { BF16, FP16 };

const char* to_string(DType dtype);  // "bf16", "fp16"
std::optional<DType> parse_dtype(std::string_view name);
inline std::size_t dtype_bytes(DType) { return 2; }  // both are 16-bit

}  // namespace overlapsim::kernels
