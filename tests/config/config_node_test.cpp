#include "config/config_node.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>

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

// yaml-cpp keeps the first of two equal keys; a configuration must not.
TEST(ConfigNode, DuplicateKeyIsAnErrorAtTheSecondOne) {
  auto msg = error_of([] { ConfigNode::load_string("a: 1\nb:\n  c: 2\n  c: 3\n", "d.yaml"); });
  EXPECT_NE(msg.find("d.yaml:4:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("b.c: duplicate key"), std::string::npos) << msg;
}

TEST(ConfigNode, KeyThatIsAListIsAnError) {
  auto msg = error_of([] { ConfigNode::load_string("? [a, b]\n: 1\n", "k.yaml"); });
  EXPECT_NE(msg.find("k.yaml:1:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a key that is a list"), std::string::npos) << msg;
}

TEST(ConfigNode, SecondDocumentIsAnError) {
  auto msg = error_of([] { ConfigNode::load_string("a: 1\n---\na: 2\n", "two.yaml"); });
  EXPECT_NE(msg.find("two.yaml:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("second YAML document"), std::string::npos) << msg;
  EXPECT_NO_THROW(ConfigNode::load_string("---\na: 1\n", "one.yaml"));
}

TEST(ConfigNode, QuantitiesThatWouldOverflowAStepAreErrors) {
  const ConfigNode n = ConfigNode::load_string(
      "long: 1e308\nok: 1e6\nslow: 1e-320\nfine: 1Bps\nweak: 0.5\n", "q.yaml");
  EXPECT_NE(error_of([&] { n.get_duration_s("long"); })
                .find("q.yaml:1:7: long: '1e308' is "
                      "longer than 10^6 s"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(n.get_duration_s("ok"), 1e6);
  EXPECT_NE(error_of([&] { n.get_bandwidth_Bps("slow"); }).find("is below 1 B/s"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(n.get_bandwidth_Bps("fine"), 1.0);
  EXPECT_NE(error_of([&] { n.get_flops_per_s("weak"); }).find("is below 1 FLOP/s"),
            std::string::npos);
}

// yaml-cpp 0.7 reports endless empty documents after a stray ',' following a top-level flow
// collection; loading such a file must end with an error, not exhaust memory.
TEST(ConfigNode, StrayCommaAfterFlowCollectionIsAnError) {
  for (const char* text : {"[1], 2\n", "   [1, 2], [3, 4],\nformat: 1\n", ",\n"}) {
    auto msg = error_of([text] { ConfigNode::load_string(text, "c.yaml"); });
    EXPECT_NE(msg.find("c.yaml"), std::string::npos) << text << ": " << msg;
  }
}

TEST(ConfigNode, TextThatIsNotUtf8IsAnError) {
  auto msg = error_of([] { ConfigNode::load_string("name: ab\xFF\n", "u.yaml"); });
  EXPECT_NE(msg.find("u.yaml:1:7: name: byte 3 is not UTF-8"), std::string::npos) << msg;
  msg = error_of([] { ConfigNode::load_string("n\xC0\xAF: 1\n", "k.yaml"); });
  EXPECT_NE(msg.find("is not UTF-8"), std::string::npos) << msg;
}

TEST(ConfigNode, DirectoryOrMissingFileIsAnError) {
  auto msg = error_of([] { ConfigNode::load_file(testing::TempDir()); });
  EXPECT_NE(msg.find("is a directory"), std::string::npos) << msg;
  msg = error_of([] { ConfigNode::load_file("/nonexistent-dir/x.yaml"); });
  EXPECT_NE(msg.find("/nonexistent-dir/x.yaml: cannot open"), std::string::npos) << msg;
}

TEST(ConfigNode, AliasBombIsRefusedNotExpanded) {
  std::string text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'h'; ++c)
    text += fmt::format("{}: &{} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n", c,
                        c, fmt::arg("p", static_cast<char>(c - 1)));
  auto msg = error_of([&] { ConfigNode::load_string(text, "bomb.yaml"); });
  EXPECT_NE(msg.find("alias bomb"), std::string::npos) << msg;
}

// Integers are never wrapped: 4294967297 was once read as 1 into an int.
TEST(ConfigNode, IntegersOutsideTheirTypeAreErrors) {
  auto n = ConfigNode::load_string(
      "sms: 4294967297\nctas: 4294967296\nbig: 9223372036854775808\nok: 2147483647\nf: 1.5\n",
      "p.yaml");
  auto msg = error_of([&] { n.get_int32("sms"); });
  EXPECT_NE(msg.find("p.yaml:1:6: sms: 4294967297 is out of range"), std::string::npos) << msg;
  msg = error_of([&] { n.get_positive_int32("ctas"); });
  EXPECT_NE(msg.find("ctas: 4294967296 is out of range"), std::string::npos) << msg;
  msg = error_of([&] { n.get_int("big"); });
  EXPECT_NE(msg.find("big: '9223372036854775808' is not an integer"), std::string::npos) << msg;
  EXPECT_EQ(n.get_int32("ok"), 2147483647);
  msg = error_of([&] { n.get_int("f"); });
  EXPECT_NE(msg.find("f: '1.5' is not an integer"), std::string::npos) << msg;
}
