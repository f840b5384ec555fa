#include "config/config_node.hpp"

#include <gtest/gtest.h>

using namespace overlapsim::config;

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(ConfigNode, ReadsHumanUnits) {
  auto n = ConfigNode::load_string("bw: 400Gbps\nsize: 1.5GiB\nlat: 25us\nk: 3\n", "t.yaml");
  EXPECT_DOUBLE_EQ(n.get_bandwidth_Bps("bw"), 50e9);
  EXPECT_EQ(n.get_bytes("size"), 1610612736u);
  EXPECT_DOUBLE_EQ(n.get_duration_s("lat"), 25e-6);
  EXPECT_EQ(n.get_positive_int("k"), 3);
  EXPECT_EQ(n.get_int("absent", 7), 7);
}

TEST(ConfigNode, ErrorsNameFileKeyPositionAndExpectedForm) {
  auto n = ConfigNode::load_string("fabric:\n  bw: 400 apples\n", "cluster.yaml");
  auto msg = error_of([&] { n.child("fabric").get_bandwidth_Bps("bw"); });
  EXPECT_NE(msg.find("cluster.yaml:2:7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fabric.bw"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected"), std::string::npos) << msg;
}

TEST(ConfigNode, MissingKeyIsAnError) {
  auto n = ConfigNode::load_string("a: 1\n", "m.yaml");
  auto msg = error_of([&] { n.get_int("b"); });
  EXPECT_NE(msg.find("b: missing"), std::string::npos) << msg;
}

TEST(ConfigNode, UnknownKeyIsAnError) {
  auto n = ConfigNode::load_string("nodes: 4\nnodez: 5\n", "c.yaml");
  auto msg = error_of([&] { n.check_keys(std::vector<std::string>{"nodes"}); });
  EXPECT_NE(msg.find("c.yaml:2:1: nodez: unknown key"), std::string::npos) << msg;
}

TEST(ConfigNode, ZeroOrNegativeBandwidthIsAnError) {
  auto n = ConfigNode::load_string("bw: 0Gbps\nneg: -3GBps\n", "c.yaml");
  EXPECT_NE(error_of([&] { n.get_bandwidth_Bps("bw"); }).find("must be positive"),
            std::string::npos);
  EXPECT_NE(error_of([&] { n.get_bandwidth_Bps("neg"); }).find("not a bandwidth"),
            std::string::npos);
}

TEST(ConfigNode, EnumAndSyntaxErrors) {
  auto n = ConfigNode::load_string("kind: torus\n", "c.yaml");
  auto msg = error_of([&] { n.get_enum("kind", {"switch", "ring"}); });
  EXPECT_NE(msg.find("expected one of: switch, ring"), std::string::npos) << msg;
  auto bad = error_of([] { ConfigNode::load_string("a: [1, 2\n", "broken.yaml"); });
  EXPECT_NE(bad.find("broken.yaml:"), std::string::npos) << bad;
  auto missing = error_of([] { ConfigNode::load_file("/nonexistent/x.yaml"); });
  EXPECT_NE(missing.find("cannot open"), std::string::npos) << missing;
}
