// Reproducible inputs: host and device must agree on every element, so the host side is
// checked here against independent arithmetic (no GPU needed).
#include "kernels/harness/random_values.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace overlapsim::kernels {
namespace {

TEST(RandomValues, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1p-8f), 0x3F80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6.
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3F82);
  EXPECT_EQ(bf16_bits_to_float(0xBF80), -1.0f);
}

TEST(RandomValues, Fp16MultiplesAreExact) {
  for (int k = -1024; k < 1024; ++k) {
    const std::uint16_t bits = fp16_bits_of_multiple(k);
    EXPECT_EQ(fp16_bits_to_float(bits), static_cast<float>(k) / 1024.0f) << "k = " << k;
  }
  EXPECT_EQ(fp16_bits_of_multiple(1024 / 2), 0x3800);  // 0.5
  EXPECT_TRUE(std::isnan(fp16_bits_to_float(0xFFFF)));
}

TEST(RandomValues, ValuesAreInRangeVariedAndNeverAllZero) {
  for (DType dtype : {DType::BF16, DType::FP16}) {
    std::set<std::uint16_t> distinct;
    int zeros = 0;
    for (std::uint64_t i = 0; i < 4096; ++i) {
      const float v = random_value(dtype, 42, i);
      EXPECT_GE(v, -1.0f);
      EXPECT_LE(v, 1.0f);
      distinct.insert(random_bits(dtype, 42, i));
      zeros += v == 0.0f;
    }
    EXPECT_GT(distinct.size(), 1000u);
    EXPECT_LT(zeros, 16);
  }
  EXPECT_NE(random_bits(DType::BF16, 1, 0), random_bits(DType::BF16, 2, 0));
  EXPECT_NE(buffer_seed(7, 0, 1), buffer_seed(7, 1, 0));
}

TEST(RandomValues, Fp8E4M3DecodesByHand) {
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x38), 1.0f);     // exponent 7 = bias
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x40), 2.0f);
  EXPECT_EQ(fp8_e4m3_bits_to_float(0xB4), -0.75f);   // 2^-1 * (1 + 4/8)
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x7E), 448.0f);   // the largest finite value
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x01), 0x1p-9f);  // smallest subnormal
  EXPECT_TRUE(std::isnan(fp8_e4m3_bits_to_float(0x7F)));
  EXPECT_EQ(fp8_e4m3_bits_to_float(0x00), 0.0f);
}

TEST(RandomValues, Fp8ValuesAreNonzeroBelowOneWithEveryMantissa) {
  std::set<std::uint8_t> distinct;
  std::set<int> mantissas;
  int negative = 0;
  for (std::uint64_t i = 0; i < 4096; ++i) {
    const std::uint8_t bits = random_fp8_bits(42, i);
    const float v = random_value(DType::FP8_E4M3, 42, i);
    EXPECT_EQ(v, fp8_e4m3_bits_to_float(bits));
    EXPECT_GE(std::fabs(v), 0x1p-6f);
    EXPECT_LE(std::fabs(v), 0.9375f);
    distinct.insert(bits);
    mantissas.insert(bits & 7);
    negative += v < 0;
  }
  EXPECT_EQ(distinct.size(), 96u);  // 2 signs x 6 exponents x 8 mantissas
  EXPECT_EQ(mantissas.size(), 8u);
  EXPECT_GT(negative, 1800);
  EXPECT_LT(negative, 2300);
  EXPECT_EQ(dtype_bytes(DType::FP8_E4M3), 1u);
  EXPECT_EQ(output_dtype(DType::FP8_E4M3), DType::BF16);
  EXPECT_EQ(output_dtype(DType::FP16), DType::FP16);
}

TEST(RandomValues, IndicesStayInRange) {
  for (std::uint64_t i = 0; i < 10000; ++i) {
    const std::int32_t index = random_index(9, i, 1000);
    EXPECT_GE(index, 0);
    EXPECT_LT(index, 1000);
  }
}

}  // namespace
}  // namespace overlapsim::kernels
