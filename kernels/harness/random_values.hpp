#pragma once
// Reproducible input data: element i of a buffer filled with seed s is a pure function of
// (dtype, s, i), computed identically by the fill kernel and by host reference code, so a
// reference never needs to copy inputs back from the GPU. Values are uniform in [-1, 1)
// with full mantissas (never zeros: they make GEMMs look faster than real data).
// C++17; usable from .cu (host and device) and from plain C++.
#include <cstdint>

#include "kernels/harness/dtype.hpp"
#include "kernels/harness/host_device.hpp"

namespace overlapsim::kernels {

OVERLAPSIM_HD std::uint64_t mix64(std::uint64_t x) {  // splitmix64 finalizer
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

OVERLAPSIM_HD std::uint64_t random_word(std::uint64_t seed, std::uint64_t index) {
  return mix64(seed ^ mix64(index));
}

// Round-to-nearest-even float -> bfloat16 bits (inputs here are finite).
OVERLAPSIM_HD std::uint16_t float_to_bf16_bits(float value) {
  union {
    float f;
    std::uint32_t u;
  } pun{value};
  const std::uint32_t rounding = 0x7FFFu + ((pun.u >> 16) & 1u);
  return static_cast<std::uint16_t>((pun.u + rounding) >> 16);
}

OVERLAPSIM_HD float bf16_bits_to_float(std::uint16_t bits) {
  union {
    std::uint32_t u;
    float f;
  } pun{static_cast<std::uint32_t>(bits) << 16};
  return pun.f;
}

OVERLAPSIM_HD float fp16_bits_to_float(std::uint16_t bits) {
  const std::uint32_t sign = bits >> 15;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  const std::uint32_t mantissa = bits & 0x3FFu;
  float magnitude;
  if (exponent == 0) {
    magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);  // 2^-24 subnormals
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? __builtin_huge_valf() : __builtin_nanf("");
  } else {
    magnitude = (1.0f + static_cast<float>(mantissa) / 1024.0f) *
                static_cast<float>(1u << exponent) / 32768.0f;  // 2^(e-15)
  }
  return sign ? -magnitude : magnitude;
}

// Exact fp16 bits of k/1024 for |k| <= 1024 (11 significant bits at most).
OVERLAPSIM_HD std::uint16_t fp16_bits_of_multiple(std::int32_t k) {
  if (k == 0) return 0;
  const std::uint16_t sign = k < 0 ? 0x8000u : 0u;
  std::uint32_t magnitude = static_cast<std::uint32_t>(k < 0 ? -k : k);
  int exponent = 0;  // value = magnitude * 2^-10 = m * 2^(exponent)
  while (magnitude < 1024u) {
    magnitude <<= 1;
    --exponent;
  }
  // Now magnitude in [1024, 2048): value = (magnitude/1024) * 2^exponent.
  const int biased = exponent + 15;
  if (biased <= 0) {  // subnormal: value = mantissa * 2^-24
    const std::uint32_t sub = magnitude >> (1 - biased);
    return static_cast<std::uint16_t>(sign | sub);
  }
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(biased) << 10) |
                                    (magnitude - 1024u));
}

OVERLAPSIM_HD float bits_to_float(DType dtype, std::uint16_t bits) {
  return dtype == DType::BF16 ? bf16_bits_to_float(bits) : fp16_bits_to_float(bits);
}

OVERLAPSIM_HD bool bits_nonfinite(DType dtype, std::uint16_t bits) {
  return dtype == DType::BF16 ? (bits & 0x7F80u) == 0x7F80u : (bits & 0x7C00u) == 0x7C00u;
}

// The 16-bit pattern of element `index` of a buffer filled with `seed` (bf16 or fp16; fp8
// buffers hold random_fp8_bits).
OVERLAPSIM_HD std::uint16_t random_bits(DType dtype, std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t word = random_word(seed, index);
  if (dtype == DType::BF16) {
    const float u = static_cast<float>(word >> 40) * (1.0f / 16777216.0f);  // 24 bits, exact
    return float_to_bf16_bits(2.0f * u - 1.0f);
  }
  const std::int32_t k = static_cast<std::int32_t>(word >> 53) - 1024;  // [-1024, 1024)
  return fp16_bits_of_multiple(k);
}

// E4M3 (bias 7, no infinities; S.1111.111 is NaN): 2^(e-7) (1 + m/8), subnormals m 2^-9.
OVERLAPSIM_HD float fp8_e4m3_bits_to_float(std::uint8_t bits) {
  const std::uint32_t exponent = (bits >> 3) & 0xFu;
  const std::uint32_t mantissa = bits & 0x7u;
  float magnitude;
  if (exponent == 0xFu && mantissa == 0x7u) {
    magnitude = __builtin_nanf("");
  } else if (exponent == 0) {
    magnitude = static_cast<float>(mantissa) * (1.0f / 512.0f);
  } else {
    const float scale = exponent >= 7 ? static_cast<float>(1u << (exponent - 7))
                                      : 1.0f / static_cast<float>(1u << (7 - exponent));
    magnitude = (1.0f + static_cast<float>(mantissa) / 8.0f) * scale;
  }
  return (bits & 0x80u) ? -magnitude : magnitude;
}

// FP8 element `index`: a random sign, exponent 2^-6 .. 2^-1 and all 3 mantissa bits, so
// |value| in [2^-6, 0.9375], never zero (the 16-bit types' [-1, 1) range with full
// mantissas, as far as 3 bits allow).
OVERLAPSIM_HD std::uint8_t random_fp8_bits(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t word = random_word(seed, index);
  const std::uint32_t sign = static_cast<std::uint32_t>(word >> 63);
  const std::uint32_t exponent = 1u + static_cast<std::uint32_t>((word >> 32) % 6u);  // 1..6
  const std::uint32_t mantissa = static_cast<std::uint32_t>(word >> 40) & 0x7u;
  return static_cast<std::uint8_t>((sign << 7) | (exponent << 3) | mantissa);
}

OVERLAPSIM_HD float random_value(DType dtype, std::uint64_t seed, std::uint64_t index) {
  if (dtype == DType::FP8_E4M3) return fp8_e4m3_bits_to_float(random_fp8_bits(seed, index));
  return bits_to_float(dtype, random_bits(dtype, seed, index));
}

// Index `index` of an index buffer filled with `seed`, uniform in [0, range).
OVERLAPSIM_HD std::int32_t random_index(std::uint64_t seed, std::uint64_t index,
                                        std::int32_t range) {
  return static_cast<std::int32_t>(random_word(seed, index) % static_cast<std::uint64_t>(range));
}

// Seed of one logical buffer of one rank, so all buffers differ.
OVERLAPSIM_HD std::uint64_t buffer_seed(std::uint64_t run_seed, int rank, int buffer) {
  return mix64(run_seed ^ mix64((static_cast<std::uint64_t>(rank) << 32) ^
                                static_cast<std::uint64_t>(buffer)));
}

}  // namespace overlapsim::kernels
