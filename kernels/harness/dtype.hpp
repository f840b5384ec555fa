#pragma once
// Element types of the kernels' inputs and outputs. C++17 (included by .cu files).
#include <cstddef>
#include <optional>
#include <string_view>

namespace overlapsim::kernels {

// FP8 is E4M3 (the "fn" variant: no infinities) and only a GEMM input: cuBLASLt's FP8
// GEMMs write bf16, so everything that reads or writes an output, a collective's buffer
// or our own GEMM stays 16-bit (overlap-bench refuses fp8 elsewhere; bench/suite.cpp).
enum class DType { BF16, FP16, FP8_E4M3 };

const char* to_string(DType dtype);  // "bf16", "fp16", "fp8"
std::optional<DType> parse_dtype(std::string_view name);
inline std::size_t dtype_bytes(DType dtype) { return dtype == DType::FP8_E4M3 ? 1 : 2; }
// The type a GEMM with inputs of `dtype` writes.
inline DType output_dtype(DType dtype) { return dtype == DType::FP8_E4M3 ? DType::BF16 : dtype; }

}  // namespace overlapsim::kernels
