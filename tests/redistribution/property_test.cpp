// Property tests: thousands of random meshes (1-4 axes, up to 1,024 devices), shapes and
// layout pairs, seeded so every run draws the same cases. For each, the synthesised and the
// naive plan run on the CPU executor: the result equals the target, the executor's counts
// equal the plan's, no device holds more than max(source, target) plus one receive buffer
// (the buffer itself within that bound), the synthesised plan receives only target data,
// each element once, and never more than the naive plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "redistribution/executor.hpp"
#include "redistribution/plan.hpp"

namespace overlapsim::redistribution {
namespace {

struct Drawn {
  Mesh mesh;
  Shape shape;
  Layout from, to;
};

// One layout: each axis splits a random dimension (at a random place in its list), holds a
// pending sum (only where `partial_ok` says), or replicates.
Layout draw_layout(std::mt19937_64& rng, const Mesh& mesh, std::size_t rank,
                   const std::vector<bool>& partial_ok, double partial_p) {
  Layout l;
  l.dims.resize(rank);
  std::uniform_real_distribution<double> u(0, 1);
  for (int a = 0; a < mesh.num_axes(); ++a) {
    const double r = u(rng);
    if (partial_ok[static_cast<std::size_t>(a)] && r < partial_p) {
      l.partial.push_back(a);
    } else if (r < partial_p + (1 - partial_p) * 0.7) {
      auto& d = l.dims[std::uniform_int_distribution<std::size_t>(0, rank - 1)(rng)];
      d.insert(d.begin() + static_cast<std::ptrdiff_t>(
                               std::uniform_int_distribution<std::size_t>(0, d.size())(rng)),
               a);
    }
  }
  return l;
}

Drawn draw(std::mt19937_64& rng) {
  static constexpr int kSizes[] = {1, 2, 2, 2, 3, 4, 4, 8, 16};
  while (true) {
    Drawn c;
    const int axes = std::uniform_int_distribution<int>(1, 4)(rng);
    int devices = 1;
    for (int a = 0; a < axes; ++a) {
      c.mesh.axis_names.push_back(std::string(1, static_cast<char>('a' + a)));
      c.mesh.axis_sizes.push_back(kSizes[std::uniform_int_distribution<int>(0, 8)(rng)]);
      devices *= c.mesh.axis_sizes.back();
    }
    if (devices > 1024) continue;
    const auto rank = std::uniform_int_distribution<std::size_t>(1, 3)(rng);
    const std::vector<bool> any(static_cast<std::size_t>(axes), true);
    c.from = draw_layout(rng, c.mesh, rank, any, 0.15);
    std::vector<bool> kept(static_cast<std::size_t>(axes), false);
    for (int a : c.from.partial) kept[static_cast<std::size_t>(a)] = true;
    c.to = draw_layout(rng, c.mesh, rank, kept, 0.3);
    // Each dimension a multiple of both splits (sometimes of their product, sometimes
    // only of their lcm, so that some intermediate splits do not divide).
    std::int64_t global = 1;
    for (std::size_t j = 0; j < rank; ++j) {
      const std::int64_t fs = split_factor(c.mesh, c.from, j);
      const std::int64_t ft = split_factor(c.mesh, c.to, j);
      const std::int64_t base =
          std::uniform_int_distribution<int>(0, 1)(rng) ? std::lcm(fs, ft) : fs * ft;
      c.shape.push_back(base * std::uniform_int_distribution<int>(1, 3)(rng));
      global *= c.shape.back();
    }
    // Tiny arrays: the executor touches every device's block.
    if (global > (1 << 14) || global * devices > (1 << 20)) continue;
    std::sort(c.from.partial.begin(), c.from.partial.end());
    std::sort(c.to.partial.begin(), c.to.partial.end());
    return c;
  }
}

std::string describe(const Drawn& c) {
  std::string s = "mesh " + c.mesh.to_string() + " shape";
  for (auto e : c.shape) {
    s += ' ';
    s += std::to_string(e);
  }
  return s + " from " + to_string(c.from, c.mesh) + " to " + to_string(c.to, c.mesh);
}

// The executor's counts against the plan's, and the result against the target.
void check_execution(const Plan& p, const Execution& ex, const std::string& what) {
  ASSERT_TRUE(ex.matches_target) << what << ": " << ex.mismatch;
  ASSERT_EQ(ex.uncovered_elements, 0) << what;
  ASSERT_EQ(ex.duplicate_elements, 0) << what;
  std::int64_t total = 0;
  for (std::size_t d = 0; d < ex.received_elements.size(); ++d) {
    std::int64_t planned = 0;
    for (const Step& s : p.steps) planned += s.received_elements[d];
    ASSERT_EQ(ex.received_elements[d], planned) << what << " device " << d;
    total += ex.received_elements[d];
  }
  ASSERT_EQ(static_cast<std::uint64_t>(total) * static_cast<std::uint64_t>(p.element_bytes),
            p.bytes_moved())
      << what;
  ASSERT_EQ(static_cast<std::uint64_t>(ex.peak_elements) * static_cast<std::uint64_t>(p.element_bytes),
            p.peak_bytes())
      << what;
}

// The 3,000 cases in four shards that ctest runs side by side (each draws the whole seeded
// sequence, which is cheap, and executes every fourth case from its own): the same cases
// as one loop, spread over the cores.
constexpr int kCases = 3000;
constexpr int kShards = 4;

class RedistributionProperties : public ::testing::TestWithParam<int> {};

TEST_P(RedistributionProperties, RandomLayoutPairs) {
  const int shard = GetParam();
  std::mt19937_64 rng(20251126);
  int large_meshes = 0, with_partial = 0, optimal = 0, without_partial = 0, executed = 0;
  for (int i = 0; i < kCases; ++i) {
    const Drawn c = draw(rng);
    large_meshes += c.mesh.num_devices() >= 256;
    with_partial += !c.from.partial.empty();
    if (i % kShards != shard) continue;
    ++executed;
    const std::string what = "case " + std::to_string(i) + ": " + describe(c);
    const Plan p = synthesize(c.mesh, c.shape, 2, c.from, c.to);
    const Execution ex = execute(p);
    ASSERT_NO_FATAL_FAILURE(check_execution(p, ex, what + " (synthesised)"));
    const Plan n = naive_plan(c.mesh, c.shape, 2, c.from, c.to);
    ASSERT_NO_FATAL_FAILURE(check_execution(n, execute(n), what + " (naive)"));

    // The memory bound: every layout passed through within max(source, target), and one
    // receive buffer (itself within that bound) on top.
    const std::int64_t bound = std::max(local_elements(c.mesh, c.shape, c.from),
                                        local_elements(c.mesh, c.shape, c.to));
    for (const Step& s : p.steps) {
      ASSERT_LE(s.in_elements, bound) << what;
      ASSERT_LE(s.out_elements, bound) << what;
      ASSERT_LE(s.buffer_elements, bound) << what;
    }
    ASSERT_LE(p.peak_bytes(), p.bound_bytes() + p.buffer_bytes()) << what;
    ASSERT_LE(p.peak_bytes(), n.peak_bytes()) << what;
    // No excess data: only target data is received, nothing held before comes back.
    ASSERT_EQ(ex.received_outside_target, 0) << what;
    ASSERT_EQ(ex.refetched_elements, 0) << what;
    ASSERT_LE(p.bytes_moved(), n.bytes_moved()) << what;
    if (c.from.partial.empty()) {
      // Without pending sums: exactly the least any plan receives.
      ++without_partial;
      std::int64_t least = 0;
      for (int d = 0; d < c.mesh.num_devices(); ++d) {
        const Box t = block_of(c.mesh, c.shape, c.to, d);
        least += t.elements() - intersect(t, block_of(c.mesh, c.shape, c.from, d)).elements();
      }
      optimal += p.bytes_moved() == static_cast<std::uint64_t>(least) * 2;
    }
  }
  EXPECT_EQ(executed, (kCases - shard + kShards - 1) / kShards);
  // The draw covers what it claims to.
  EXPECT_GT(large_meshes, kCases / 50);
  EXPECT_GT(with_partial, kCases / 10);
  EXPECT_EQ(optimal, without_partial);
}

INSTANTIATE_TEST_SUITE_P(Shards, RedistributionProperties, ::testing::Range(0, kShards));

}  // namespace
}  // namespace overlapsim::redistribution
