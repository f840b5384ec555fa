// The one integer parser: whole decimal text only, and no value that C++ would wrap.
#include "config/integers.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

using namespace overlapsim::config;

TEST(ParseInt, ReadsWholeDecimalText) {
  EXPECT_EQ(parse_int("4096"), 4096);
  EXPECT_EQ(parse_int("-12"), -12);
  EXPECT_EQ(parse_int("+3"), 3);
  EXPECT_EQ(parse_int("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(parse_int("-9223372036854775808"), std::numeric_limits<std::int64_t>::min());
}

TEST(ParseInt, RejectsWhatWouldWrapOrTruncate) {
  for (const char* bad : {"", "+", "++1", "+-1", " 1", "1 ", "1.5", "1e3", "0x10", "12abc",
                          "9223372036854775808", "-9223372036854775809", "18446744073709551616"})
    EXPECT_FALSE(parse_int(bad)) << bad;
}

TEST(NarrowInt, KeepsOnlyValuesTheTypeHolds) {
  EXPECT_EQ(narrow_int<int>(2147483647), 2147483647);
  EXPECT_FALSE(narrow_int<int>(2147483648LL));
  EXPECT_FALSE(narrow_int<int>(4294967297LL));  // once read as 1
  EXPECT_FALSE(narrow_int<int>(4294967296LL));  // once read as 0
  EXPECT_EQ(narrow_int<int>(-5), -5);
  EXPECT_FALSE(narrow_int<unsigned>(-1));
}

TEST(CheckedMul, ReportsOverflowInsteadOfWrapping) {
  EXPECT_EQ(checked_mul(65536, 65536), 4294967296LL);  // an int would hold 0
  EXPECT_EQ(checked_mul(-3, 7), -21);
  EXPECT_FALSE(checked_mul(1'000'000'000'000LL, 10'000'000'000LL));
  EXPECT_FALSE(checked_mul(std::numeric_limits<std::int64_t>::min(), -1));
}
