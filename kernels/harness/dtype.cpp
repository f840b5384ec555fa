#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels {

const char* to_string(DType dtype) { return dtype == DType::BF16 ? "bf16" : "fp16"; }

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "bf16") return DType::BF16;
  if (name == "fp16") return DType::FP16;
  return std::nullopt;
}

}  // namespace overlapsim::kernels
