#include "sim/profile/table_axis.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace overlapsim::sim {
namespace {

TEST(TableAxis, PositionIsLinearInLogOrInX) {
  const std::vector<double> axis{1024, 4096, 16384};
  const AxisPosition log_mid = axis_position(axis, 2048, true);  // log-midpoint of 1024, 4096
  EXPECT_EQ(log_mid.lo, 0u);
  EXPECT_NEAR(log_mid.w, 0.5, 1e-12);
  const AxisPosition linear = axis_position(axis, 2560, false);  // midpoint of 1024, 4096
  EXPECT_EQ(linear.lo, 0u);
  EXPECT_NEAR(linear.w, 0.5, 1e-12);
  const AxisPosition upper = axis_position(axis, 8192, true);
  EXPECT_EQ(upper.lo, 1u);
  EXPECT_NEAR(upper.w, 0.5, 1e-12);
}

TEST(TableAxis, ClampedAtTheEnds) {
  const std::vector<double> axis{64, 128};
  EXPECT_EQ(axis_position(axis, 32, false).lo, 0u);
  EXPECT_EQ(axis_position(axis, 32, false).w, 0.0);
  EXPECT_EQ(axis_position(axis, 512, false).lo, 0u);  // the last point, weight 1
  EXPECT_EQ(axis_position(axis, 512, false).w, 1.0);
  EXPECT_EQ(axis_position({128}, 512, true).w, 0.0);  // one point: itself
}

TEST(TableAxis, CheckNamesTheAxisAndIndex) {
  EXPECT_NO_THROW(check_table_axis({1, 2, 3}, "t: m"));
  const auto message = [](const std::vector<double>& axis) {
    try {
      check_table_axis(axis, "t: m");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(message({}), "t: m is empty");
  EXPECT_EQ(message({1, 0}), "t: m[1] is not positive");
  EXPECT_EQ(message({2, 2}), "t: m is not strictly increasing at index 1");
  EXPECT_EQ(message({1, INFINITY}), "t: m[1] is not positive");
}

}  // namespace
}  // namespace overlapsim::sim
