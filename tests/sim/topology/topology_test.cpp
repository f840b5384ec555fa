#include "sim/topology/topology.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace overlapsim::sim {
namespace {

constexpr double kB = 10e9;
constexpr double kLat = 1e-6;

// Checks that `path` is a chain of links from rank src's vertex to rank dst's vertex.
void expect_connected(const Topology& t, int src, int dst, const std::vector<LinkId>& path) {
  ASSERT_FALSE(path.empty());
  VertexId at = t.gpu_vertex(src);
  for (const LinkId id : path) {
    ASSERT_EQ(t.link_ends(id).first, at) << "link " << id << " does not continue the path";
    at = t.link_ends(id).second;
  }
  EXPECT_EQ(at, t.gpu_vertex(dst));
}

Topology star(int n) {
  Topology t("star");
  const VertexId sw = t.add_node(NodeKind::Switch, "sw");
  for (int i = 0; i < n; ++i) t.connect(t.add_gpu(i), sw, kB, kLat, LinkClass::Network);
  return t;
}

// Two GPUs joined by `width` parallel two-hop paths through distinct switches.
Topology diamond(int width) {
  Topology t("diamond");
  const VertexId a = t.add_gpu(0), b = t.add_gpu(1);
  for (int i = 0; i < width; ++i) {
    const VertexId s = t.add_node(NodeKind::Switch, fmt::format("s{}", i));
    t.connect(a, s, kB, kLat, LinkClass::Network);
    t.connect(s, b, kB, kLat, LinkClass::Network);
  }
  return t;
}

TEST(Topology, ConnectAddsTwoDirectedLinksWithTheSameCapacity) {
  Topology t("pair");
  const VertexId a = t.add_gpu(0), b = t.add_gpu(1);
  const auto [ab, ba] = t.connect(a, b, kB, kLat, LinkClass::NvLink);
  EXPECT_EQ(t.num_links(), 2u);
  EXPECT_EQ(t.link_ends(ab), std::make_pair(a, b));
  EXPECT_EQ(t.link_ends(ba), std::make_pair(b, a));
  EXPECT_EQ(t.link(ab).bandwidth_Bps, kB);
  EXPECT_EQ(t.link(ba).bandwidth_Bps, kB);
  EXPECT_EQ(t.link(ab).id, ab);
  EXPECT_EQ(t.link(ba).cls, LinkClass::NvLink);
  EXPECT_EQ(t.num_gpus(), 2);
  EXPECT_EQ(t.num_hosts(), 2);
  EXPECT_EQ(t.host_of(1), 1);
}

TEST(Topology, RejectsBadLinksAndRanks) {
  Topology t("bad");
  const VertexId a = t.add_gpu(0), b = t.add_gpu(0);
  EXPECT_THROW(t.connect(a, b, 0, kLat, LinkClass::Network), std::invalid_argument);
  EXPECT_THROW(t.connect(a, b, -1, kLat, LinkClass::Network), std::invalid_argument);
  EXPECT_THROW(t.connect(a, b, kB, -1e-9, LinkClass::Network), std::invalid_argument);
  EXPECT_THROW(t.connect(a, a, kB, kLat, LinkClass::Network), std::invalid_argument);
  EXPECT_THROW(t.connect(a, 99, kB, kLat, LinkClass::Network), std::invalid_argument);
  EXPECT_THROW(t.add_gpu(-1), std::invalid_argument);
  EXPECT_THROW(t.add_node(NodeKind::Gpu, "g"), std::invalid_argument);
  EXPECT_THROW(t.gpu_vertex(2), std::out_of_range);
  EXPECT_THROW(t.route(0, 5), std::out_of_range);
  EXPECT_THROW(t.route(-1, 0), std::out_of_range);
  EXPECT_THROW(t.route(0, 1), std::runtime_error);  // not connected
  EXPECT_EQ(t.num_hosts(), 1);
}

TEST(Topology, StarRoutesUpAndDown) {
  const Topology t = star(4);
  const auto path = t.route(1, 3);
  ASSERT_EQ(path.size(), 2u);
  expect_connected(t, 1, 3, path);
  EXPECT_DOUBLE_EQ(t.path_latency_s(path), 2 * kLat);
  EXPECT_TRUE(t.route(2, 2).empty());
}

TEST(Topology, GpusRelayByDefaultSoChainsRoute) {
  Topology t("chain");
  std::vector<VertexId> v;
  for (int i = 0; i < 5; ++i) v.push_back(t.add_gpu(i));
  for (int i = 0; i + 1 < 5; ++i) t.connect(v[i], v[i + 1], kB, kLat, LinkClass::NvLink);
  const auto path = t.route(0, 4);
  EXPECT_EQ(path.size(), 4u);
  expect_connected(t, 0, 4, path);
  t.set_gpus_forward(false);
  EXPECT_THROW(t.route(0, 4), std::runtime_error);
  EXPECT_EQ(t.route(0, 1).size(), 1u);  // neighbours still reach each other
}

TEST(Topology, NonRelayingGpusAreNeverTransit) {
  // a - b directly (1 hop through b would be a detour anyway); c reachable from a only via
  // b's second link or via a 3-hop switch path. With relaying off the switch path is used.
  Topology t("detour");
  const VertexId a = t.add_gpu(0), b = t.add_gpu(0), c = t.add_gpu(1);
  t.connect(a, b, kB, kLat, LinkClass::NvLink);
  t.connect(b, c, kB, kLat, LinkClass::NvLink);
  const VertexId s1 = t.add_node(NodeKind::Switch, "s1"), s2 = t.add_node(NodeKind::Switch, "s2");
  t.connect(a, s1, kB, kLat, LinkClass::Network);
  t.connect(s1, s2, kB, kLat, LinkClass::Network);
  t.connect(s2, c, kB, kLat, LinkClass::Network);
  EXPECT_EQ(t.route(0, 2).size(), 2u);  // through GPU b
  t.set_gpus_forward(false);
  const auto path = t.route(0, 2);
  ASSERT_EQ(path.size(), 3u);
  expect_connected(t, 0, 2, path);
  for (const LinkId id : path) EXPECT_EQ(t.link(id).cls, LinkClass::Network);
}

TEST(Topology, EcmpIsDeterministicAndSpreadsOverEqualPaths) {
  const Topology t = diamond(8);
  const Topology u = diamond(8);
  std::vector<int> used(8, 0);
  for (std::uint64_t flow = 0; flow < 800; ++flow) {
    const auto path = t.route(0, 1, flow);
    ASSERT_EQ(path.size(), 2u);
    expect_connected(t, 0, 1, path);
    EXPECT_EQ(path, u.route(0, 1, flow));     // same answer from an independent copy
    EXPECT_EQ(path, t.route(0, 1, flow));     // and on a second call
    ++used[t.link_ends(path[0]).second - 2];  // switches are vertices 2..9
  }
  for (int i = 0; i < 8; ++i) {
    EXPECT_GT(used[i], 60) << "switch " << i;  // 100 expected each
    EXPECT_LT(used[i], 140) << "switch " << i;
  }
}

TEST(Topology, CopiesRouteLikeTheOriginal) {
  const Topology t = diamond(4);
  Topology copy = t;
  Topology assigned("other");
  assigned = t;
  Topology moved = diamond(4);
  Topology target = std::move(moved);
  for (std::uint64_t flow = 0; flow < 16; ++flow) {
    EXPECT_EQ(copy.route(0, 1, flow), t.route(0, 1, flow));
    EXPECT_EQ(assigned.route(0, 1, flow), t.route(0, 1, flow));
    EXPECT_EQ(target.route(0, 1, flow), t.route(0, 1, flow));
  }
}

TEST(Topology, RingTakesTheShorterWayAround) {
  Topology t("ring");
  const int n = 10;
  std::vector<VertexId> v;
  for (int i = 0; i < n; ++i) v.push_back(t.add_gpu(i));
  for (int i = 0; i < n; ++i) t.connect(v[i], v[(i + 1) % n], kB, kLat, LinkClass::Network);
  for (int src = 0; src < n; ++src)
    for (int dst = 0; dst < n; ++dst) {
      if (src == dst) continue;
      const int forward = (dst - src + n) % n;
      const auto path = t.route(src, dst);
      EXPECT_EQ(static_cast<int>(path.size()), std::min(forward, n - forward));
      expect_connected(t, src, dst, path);
    }
}

TEST(Topology, CacheLimitEvictsButRoutesStayTheSame) {
  Topology t("ring");
  const int n = 64;
  std::vector<VertexId> v;
  for (int i = 0; i < n; ++i) v.push_back(t.add_gpu(i));
  for (int i = 0; i < n; ++i) t.connect(v[i], v[(i + 1) % n], kB, kLat, LinkClass::Network);
  std::vector<std::vector<LinkId>> unlimited;
  for (int dst = 1; dst < n; ++dst) unlimited.push_back(t.route(0, dst, 7));
  EXPECT_EQ(t.route_cache_stats().distance_tables, static_cast<std::size_t>(n - 1));
  EXPECT_EQ(t.route_cache_stats().evictions, 0u);

  Topology small = t;
  small.set_route_cache_limit_bytes(4 * n * sizeof(std::uint16_t));  // four tables
  for (int round = 0; round < 2; ++round)
    for (int dst = 1; dst < n; ++dst) EXPECT_EQ(small.route(0, dst, 7), unlimited[dst - 1]);
  const auto stats = small.route_cache_stats();
  EXPECT_LE(stats.distance_tables, 4u);
  EXPECT_GT(stats.evictions, 0u);
}

TEST(Topology, AddingLinksAfterRoutingRecomputesRoutes) {
  Topology t("grow");
  const VertexId a = t.add_gpu(0), b = t.add_gpu(1);
  const VertexId s1 = t.add_node(NodeKind::Switch, "s1"), s2 = t.add_node(NodeKind::Switch, "s2");
  t.connect(a, s1, kB, kLat, LinkClass::Network);
  t.connect(s1, s2, kB, kLat, LinkClass::Network);
  t.connect(s2, b, kB, kLat, LinkClass::Network);
  EXPECT_EQ(t.route(0, 1).size(), 3u);
  t.connect(a, b, kB, kLat, LinkClass::NvLink);
  EXPECT_EQ(t.route(0, 1).size(), 1u);
}

// Hops from src to dst by a plain BFS that, like route(), passes only through vertices
// that relay (switches; GPUs when gpus_forward()). -1 when unreachable.
int reference_hops(const Topology& t, int src, int dst) {
  const auto& g = t.graph();
  std::vector<int> dist(t.num_vertices(), -1);
  std::deque<VertexId> queue{t.gpu_vertex(src)};
  dist[t.gpu_vertex(src)] = 0;
  while (!queue.empty()) {
    const VertexId v = queue.front();
    queue.pop_front();
    if (v == t.gpu_vertex(dst)) return dist[v];
    if (v != t.gpu_vertex(src) && g[v].kind == NodeKind::Gpu && !t.gpus_forward()) continue;
    for (const auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
      const VertexId u = boost::target(e, g);
      if (dist[u] < 0) {
        dist[u] = dist[v] + 1;
        queue.push_back(u);
      }
    }
  }
  return -1;
}

// Random graphs of GPUs and switches: route() must agree with a plain BFS on every pair,
// whatever shape the destinations' neighbourhoods have (anchors, no anchors, stars).
TEST(Topology, RoutesAreShortestOnRandomGraphs) {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 40; ++trial) {
    Topology t("random");
    const int gpus = 6 + static_cast<int>(rng() % 10), switches = 1 + static_cast<int>(rng() % 8);
    std::vector<VertexId> gv, sv;
    for (int i = 0; i < gpus; ++i) gv.push_back(t.add_gpu(i % 3));
    for (int i = 0; i < switches; ++i) sv.push_back(t.add_node(NodeKind::Switch, "s"));
    const auto pick = [&](const std::vector<VertexId>& from) { return from[rng() % from.size()]; };
    for (int e = 0; e < gpus + switches + static_cast<int>(rng() % 12); ++e) {
      const int kind = static_cast<int>(rng() % 3);
      const VertexId a = kind == 2 ? pick(sv) : pick(gv);
      const VertexId b = kind == 0 ? pick(gv) : pick(sv);
      if (a != b) t.connect(a, b, kB, kLat, LinkClass::Network);
    }
    t.set_gpus_forward(trial % 2 == 0);
    for (int src = 0; src < gpus; ++src)
      for (int dst = 0; dst < gpus; ++dst) {
        if (src == dst) continue;
        const int expected = reference_hops(t, src, dst);
        for (std::uint64_t flow = 0; flow < 3; ++flow) {
          if (expected < 0) {
            EXPECT_THROW(t.route(src, dst, flow), std::runtime_error);
            continue;
          }
          const auto path = t.route(src, dst, flow);
          ASSERT_EQ(static_cast<int>(path.size()), expected)
              << "trial " << trial << " " << src << "->" << dst;
          expect_connected(t, src, dst, path);
          for (std::size_t i = 0; i + 1 < path.size(); ++i) {
            const VertexId mid = t.link_ends(path[i]).second;
            EXPECT_TRUE(t.gpus_forward() || t.graph()[mid].kind != NodeKind::Gpu);
          }
        }
      }
  }
}

TEST(Topology, ConcurrentRoutesMatchSerialOnes) {
  const Topology t = diamond(16);
  std::vector<std::vector<LinkId>> serial;
  for (std::uint64_t flow = 0; flow < 2000; ++flow) serial.push_back(t.route(0, 1, flow));
  const Topology fresh = diamond(16);
  std::vector<std::vector<LinkId>> a(2000), b(2000);
  std::thread ta([&] {
    for (std::uint64_t f = 0; f < 2000; ++f) a[f] = fresh.route(0, 1, f);
  });
  std::thread tb([&] {
    for (std::uint64_t f = 0; f < 2000; ++f) b[f] = fresh.route(1, 0, f);
  });
  ta.join();
  tb.join();
  EXPECT_EQ(a, serial);
  for (std::uint64_t f = 0; f < 2000; ++f) EXPECT_EQ(b[f].size(), 2u);
}

TEST(Topology, NamesOfKindsAndClasses) {
  EXPECT_STREQ(to_string(NodeKind::NvSwitch), "nvswitch");
  EXPECT_STREQ(to_string(NodeKind::SpineSwitch), "spine-switch");
  EXPECT_STREQ(to_string(LinkClass::Pcie), "pcie");
}

}  // namespace
}  // namespace overlapsim::sim
