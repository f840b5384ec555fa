#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels {

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::BF16: return "bf16";
    case DType::FP16: return "fp16";
    case DType::FP8_E4M3: return "fp8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "bf16") return DType::BF16;
  if (name == "fp16") return DType::FP16;
  if (name == "fp8") return DType::FP8_E4M3;
  return std::nullopt;
}

}  // namespace overlapsim::kernels
