#include "config/units.hpp"

#include <gtest/gtest.h>

using namespace overlapsim::config;

TEST(Units, Bytes) {
  EXPECT_EQ(parse_bytes("4096"), 4096u);
  EXPECT_EQ(parse_bytes("64KiB"), 65536u);
  EXPECT_EQ(parse_bytes("1.5GiB"), 1610612736u);
  EXPECT_EQ(parse_bytes("2GB"), 2000000000u);
  EXPECT_EQ(parse_bytes(" 1 MiB "), 1048576u);
  EXPECT_FALSE(parse_bytes("1.5Gbps"));
  EXPECT_FALSE(parse_bytes("-1KiB"));
  EXPECT_FALSE(parse_bytes("lots"));
  EXPECT_FALSE(parse_bytes(""));
}

TEST(Units, Bandwidth) {
  EXPECT_DOUBLE_EQ(*parse_bandwidth_Bps("400Gbps"), 50e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth_Bps("400Gb/s"), 50e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth_Bps("50GBps"), 50e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth_Bps("450GB/s"), 450e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth_Bps("1e9"), 1e9);
  EXPECT_FALSE(parse_bandwidth_Bps("400G"));
  EXPECT_FALSE(parse_bandwidth_Bps("400GiB"));
  EXPECT_FALSE(parse_bandwidth_Bps("nan"));
}

TEST(Units, Duration) {
  EXPECT_DOUBLE_EQ(*parse_duration_s("25us"), 25e-6);
  EXPECT_DOUBLE_EQ(*parse_duration_s("1.5ms"), 1.5e-3);
  EXPECT_DOUBLE_EQ(*parse_duration_s("700ns"), 700e-9);
  EXPECT_DOUBLE_EQ(*parse_duration_s("2"), 2.0);
  EXPECT_DOUBLE_EQ(*parse_duration_s("2e-6"), 2e-6);
  EXPECT_FALSE(parse_duration_s("5 parsecs"));
}

TEST(Units, Flops) {
  EXPECT_DOUBLE_EQ(*parse_flops_per_s("989TFLOPS"), 989e12);
  EXPECT_DOUBLE_EQ(*parse_flops_per_s("9.89e14"), 9.89e14);
  EXPECT_FALSE(parse_flops_per_s("989TB"));
}

TEST(Units, Formatting) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_duration(25e-6), "25.00 us");
  EXPECT_EQ(format_bandwidth(50e9), "50.00 GB/s");
}
