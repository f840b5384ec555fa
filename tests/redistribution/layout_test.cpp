// Layout notation: JAX PartitionSpec and DTensor placements read into the same type, the
// blocks each device holds, and every bad layout named in one line.
#include <gtest/gtest.h>

#include <string>

#include "config/error.hpp"
#include "redistribution/layout.hpp"
#include "redistribution/mesh.hpp"

namespace overlapsim::redistribution {
namespace {

const Mesh kMesh = parse_mesh("x=2,y=4", "--mesh");

std::string error_of(const std::string& text, const Shape& shape = {8, 8},
                     const Mesh& mesh = kMesh) {
  try {
    parse_layout(text, mesh, shape, "--from");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Mesh, ParsesAxesAndNumbersDevicesRowMajor) {
  EXPECT_EQ(kMesh.num_devices(), 8);
  EXPECT_EQ(kMesh.axis_index("y"), 1);
  EXPECT_EQ(kMesh.coords(5), (std::vector<int>{1, 1}));
  EXPECT_EQ(kMesh.device({1, 3}), 7);
  EXPECT_EQ(kMesh.to_string(), "x=2,y=4");
  // The group along y of device 5 is the devices with x = 1, ordered by y.
  EXPECT_EQ(group_of(kMesh, {1}, 5), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(group_of(kMesh, {0}, 5), (std::vector<int>{1, 5}));
  EXPECT_EQ(groups(kMesh, {0}).size(), 4u);
}

TEST(Mesh, BadMeshesAreNamed) {
  EXPECT_THROW(parse_mesh("x=2,x=4", "--mesh"), config::ConfigError);
  EXPECT_THROW(parse_mesh("x=0", "--mesh"), config::ConfigError);
  EXPECT_THROW(parse_mesh("x2", "--mesh"), config::ConfigError);
  EXPECT_THROW(parse_mesh("", "--mesh"), config::ConfigError);
}

TEST(Layout, PartitionSpecAndPlacementsAgree) {
  const Shape shape{8, 16};
  const Layout a = parse_layout("P('x', None)", kMesh, shape, "--from");
  EXPECT_EQ(a.dims, (std::vector<std::vector<int>>{{0}, {}}));
  const Layout b = parse_layout("[Shard(0), Replicate()]", kMesh, shape, "--from");
  EXPECT_EQ(a, b);
  const Layout c = parse_layout("P(None, ('x','y'))", kMesh, shape, "--from");
  EXPECT_EQ(c.dims, (std::vector<std::vector<int>>{{}, {0, 1}}));
  EXPECT_EQ(c, parse_layout("[Shard(1), Shard(-1)]", kMesh, shape, "--from"));
  EXPECT_EQ(to_string(c, kMesh), "P(None, ('x', 'y'))");
  // Fewer entries than dimensions: the rest are replicated.
  EXPECT_EQ(parse_layout("PartitionSpec(\"y\")", kMesh, shape, "--from").dims,
            (std::vector<std::vector<int>>{{1}, {}}));
  const Layout p = parse_layout("[Shard(1), Partial()]", kMesh, shape, "--from");
  EXPECT_EQ(p.partial, (std::vector<int>{1}));
  EXPECT_EQ(p, parse_layout("P(None, 'x', unreduced={'y'})", kMesh, shape, "--from"));
  EXPECT_EQ(to_string(p, kMesh), "P(None, 'x', unreduced={'y'})");
}

TEST(Layout, BlocksAreMajorFirst) {
  const Shape shape{8, 16};
  const Layout l = parse_layout("P(None, ('y','x'))", kMesh, shape, "--from");
  EXPECT_EQ(local_elements(kMesh, shape, l), 16);
  // Device 5 = (x 1, y 1): block y * 2 + x = 3 of width 2 in dimension 1.
  const Box b = block_of(kMesh, shape, l, 5);
  EXPECT_EQ(b.lo, (std::vector<std::int64_t>{0, 6}));
  EXPECT_EQ(b.hi, (std::vector<std::int64_t>{8, 8}));
}

TEST(Layout, BadLayoutsAreNamed) {
  EXPECT_NE(error_of("P('x', 'x')").find("axis 'x' is used twice"), std::string::npos);
  EXPECT_NE(error_of("P('z', None)").find("axis 'z' is not in the mesh x=2,y=4"),
            std::string::npos);
  EXPECT_NE(error_of("P(('x','y'))", {12, 8}).find("dimension 0 of extent 12 is not divisible "
                                                  "by its split x*y = 8"),
            std::string::npos);
  EXPECT_NE(error_of("P(None, None, 'x')").find("3 entries but the array has 2"),
            std::string::npos);
  EXPECT_NE(error_of("[Shard(0)]").find("1 placements for the mesh"), std::string::npos);
  EXPECT_NE(error_of("[Shard(2), Replicate()]").find("Shard(2) names no dimension"),
            std::string::npos);
  EXPECT_EQ(error_of("[Partial(), Shard(0)]", {8, 8}), "");
  EXPECT_NE(error_of("P('x', unreduced={'x'})").find("used twice"), std::string::npos);
  EXPECT_NE(error_of("Q('x')").find("cannot read the layout"), std::string::npos);
  EXPECT_NE(error_of("P('x'").find("cannot read the layout"), std::string::npos);
  EXPECT_NE(error_of("[Shard(0), Partial('max')]").find("Partial('max') is not supported"),
            std::string::npos);
  for (const char* bad : {"P('x', 'x')", "P('z')", "Q('x')", "[Shard(0)]"})
    EXPECT_EQ(error_of(bad).find('\n'), std::string::npos) << bad;
}

TEST(Layout, ShapesAndDtypes) {
  EXPECT_EQ(parse_shape("4096x8192", "--shape"), (Shape{4096, 8192}));
  EXPECT_EQ(parse_shape("7", "--shape"), (Shape{7}));
  EXPECT_THROW(parse_shape("4096x", "--shape"), config::ConfigError);
  EXPECT_THROW(parse_shape("0x4", "--shape"), config::ConfigError);
  EXPECT_EQ(parse_dtype_bytes("bf16", "--dtype"), 2);
  EXPECT_EQ(parse_dtype_bytes("fp32", "--dtype"), 4);
  EXPECT_THROW(parse_dtype_bytes("bf17", "--dtype"), config::ConfigError);
}

}  // namespace
}  // namespace overlapsim::redistribution
