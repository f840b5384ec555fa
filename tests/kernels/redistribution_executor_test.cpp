// Our NCCL executor of redistribution plans (kernels/redistribution/): on 2 GPUs (and on 4
// where present), the synthesised and the naive plan of hand-picked and random layout pairs
// leave every rank with exactly the target block's bits, run after run; the box copy
// kernel matches a host copy for strided boxes. Skips without enough GPUs.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/harness/device_buffer.hpp"
#include "kernels/redistribution/block_kernels.hpp"
#include "kernels/redistribution/plan_executor.hpp"
#include "redistribution/plan.hpp"
#include "tests/kernels/gpu_test_support.hpp"

namespace overlapsim::kernels::redistribution {
namespace {

struct Case {
  std::string mesh, shape, from, to;
};

// Runs both plans of every case on `world` ranks; returns, per case and plan, the wrong
// elements summed over ranks and two runs (-1 where the run failed).
std::vector<double> run_cases(int world, const std::vector<Case>& cases) {
  std::vector<rd::Plan> plans;
  for (const Case& c : cases) {
    const rd::Mesh mesh = rd::parse_mesh(c.mesh, "mesh");
    const rd::Shape shape = rd::parse_shape(c.shape, "shape");
    const rd::Layout from = rd::parse_layout(c.from, mesh, shape, "from");
    const rd::Layout to = rd::parse_layout(c.to, mesh, shape, "to");
    plans.push_back(rd::synthesize(mesh, shape, 2, from, to));
    plans.push_back(rd::naive_plan(mesh, shape, 2, from, to));
  }
  std::vector<double> wrong(plans.size(), -1);
  HarnessOptions h;
  h.world = world;
  h.timeout_s = 60;
  h.blocking_comms = true;
  const Status st = run_ranks(h, [&](RankContext& ctx) -> Status {
    std::vector<double> w(plans.size(), 0);
    for (std::size_t p = 0; p < plans.size(); ++p) {
      PlanExecutor exec;
      OVERLAPSIM_TRY(quiesce(ctx, "test prepare"));
      OVERLAPSIM_TRY(exec.prepare(ctx, plans[p]));
      OVERLAPSIM_TRY(quiesce(ctx, "test prepared"));
      for (int run = 0; run < 2; ++run) {
        std::uint64_t n = 0;
        if (run == 0) OVERLAPSIM_TRY(exec.poison_outputs(ctx.compute_stream));
        OVERLAPSIM_TRY(exec.run(ctx.compute_stream));
        OVERLAPSIM_TRY(exec.count_wrong(ctx.compute_stream, &n));
        w[p] += static_cast<double>(n);
      }
      OVERLAPSIM_TRY(quiesce(ctx, "test release"));
      OVERLAPSIM_TRY(exec.release());
      OVERLAPSIM_TRY(quiesce(ctx, "test released"));
    }
    OVERLAPSIM_TRY(allreduce_host(ctx.comm, ctx.compute_stream, w, ncclSum));
    if (ctx.comm.rank == 0) wrong = w;
    return Status::success();
  });
  EXPECT_TRUE(st.ok) << st.message;
  return wrong;
}

void expect_all_right(int world, const std::vector<Case>& cases) {
  const std::vector<double> wrong = run_cases(world, cases);
  for (std::size_t i = 0; i < cases.size(); ++i)
    for (int v = 0; v < 2; ++v)
      EXPECT_EQ(wrong[2 * i + static_cast<std::size_t>(v)], 0)
          << (v ? "naive " : "synthesised ") << cases[i].mesh << " " << cases[i].shape << " "
          << cases[i].from << " -> " << cases[i].to;
}

TEST(RedistributionExecutor, HandPickedPairsOnTwoGpus) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  expect_all_right(2, {
                          {"x=2", "256x384", "P('x', None)", "P(None, 'x')"},      // all-to-all
                          {"x=2", "256x384", "P(None, 'x')", "P('x', None)"},
                          {"x=2", "256x384", "P('x', None)", "P()"},               // all-gather
                          {"x=2", "256x384", "P(None, 'x')", "P()"},               // unpacked
                          {"x=2", "256x384", "[Partial()]", "P('x', None)"},       // RS in place
                          {"x=2", "256x384", "[Partial()]", "P(None, 'x')"},       // RS packed
                          {"x=2", "256x384", "[Partial()]", "P()"},                // all-reduce
                          {"x=2", "256x384", "P()", "P(None, 'x')"},               // slice copy
                          {"x=2", "256x384", "P()", "P('x', None)"},               // slice view
                          {"x=2", "8x64x48", "P(None, 'x')", "P('x')"},            // MoE-like
                          {"x=2", "64x6x10", "P(None, None, 'x')", "P(None, 'x')"},  // odd widths
                      });
}

TEST(RedistributionExecutor, MeshesOfFourGpus) {
  OVERLAPSIM_REQUIRE_GPUS(4);
  expect_all_right(4, {
                          {"x=4", "256x384", "P('x', None)", "P(None, 'x')"},
                          {"x=2,y=2", "256x384", "P(('x','y'), None)", "P(None, ('y','x'))"},
                          {"x=2,y=2", "256x384", "P('x', 'y')", "P('y', 'x')"},     // permute
                          {"x=2,y=2", "256x384", "[Shard(0), Partial()]", "P(('x','y'))"},
                          {"x=2,y=2", "256x384", "[Partial(), Partial()]", "P('y')"},
                          {"x=2,y=2", "256x384", "P('x', None)", "P(None, 'y')"},
                      });
}

// Random layouts on a 1-D or 2-D mesh of `world` devices (seeded).
std::vector<Case> random_cases(int world, int count) {
  std::mt19937_64 rng(7 + static_cast<unsigned>(world));
  const std::vector<std::string> meshes =
      world == 4 ? std::vector<std::string>{"x=4", "x=2,y=2"} : std::vector<std::string>{"x=2"};
  std::vector<Case> out;
  while (static_cast<int>(out.size()) < count) {
    Case c;
    c.mesh = meshes[std::uniform_int_distribution<std::size_t>(0, meshes.size() - 1)(rng)];
    const rd::Mesh mesh = rd::parse_mesh(c.mesh, "mesh");
    const int rank = std::uniform_int_distribution<int>(1, 3)(rng);
    c.shape.clear();
    for (int i = 0; i < rank; ++i) {
      if (i) c.shape += 'x';
      c.shape += std::to_string(world * 8 * std::uniform_int_distribution<int>(1, 3)(rng));
    }
    std::vector<bool> summed(static_cast<std::size_t>(mesh.num_axes()), false);
    auto layout = [&](bool source) {
      std::vector<std::string> dims(static_cast<std::size_t>(rank));
      std::string partial;
      for (int a = 0; a < mesh.num_axes(); ++a) {
        const std::string name = mesh.axis_names[static_cast<std::size_t>(a)];
        const int r = std::uniform_int_distribution<int>(0, 9)(rng);
        // A target may keep pending sums the source has, never add one.
        if ((source || summed[static_cast<std::size_t>(a)]) && r < 2) {
          if (source) summed[static_cast<std::size_t>(a)] = true;
          if (!partial.empty()) partial += ',';
          partial += '\'' + name + '\'';
        } else if (r < 8) {
          auto& d = dims[std::uniform_int_distribution<std::size_t>(0, dims.size() - 1)(rng)];
          if (!d.empty()) d += ',';
          d += '\'' + name + '\'';
        }
      }
      std::string p = "P(";
      for (int i = 0; i < rank; ++i) {
        const auto& d = dims[static_cast<std::size_t>(i)];
        if (i) p += ", ";
        if (d.empty())
          p += "None";
        else if (d.find(',') == std::string::npos)
          p += d;
        else
          p += '(' + d + ')';
      }
      if (!partial.empty()) p += ", unreduced={" + partial + "}";
      return p + ")";
    };
    c.from = layout(true);
    c.to = layout(false);
    try {
      const rd::Shape shape = rd::parse_shape(c.shape, "shape");
      rd::synthesize(mesh, shape, 2, rd::parse_layout(c.from, mesh, shape, "from"),
                     rd::parse_layout(c.to, mesh, shape, "to"));
    } catch (const std::exception&) {
      continue;  // a drawn layout the library rejects
    }
    out.push_back(c);
  }
  return out;
}

TEST(RedistributionExecutor, RandomPairs) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const int world = visible_gpu_count() >= 4 ? 4 : 2;
  expect_all_right(world, random_cases(world, 24));
}

TEST(RedistributionExecutor, BoxCopyMatchesAHostCopy) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  // A 5 x 7 x 12 box out of a 6 x 9 x 40 array into a 5 x 8 x 16 one, at odd offsets.
  const std::vector<std::int64_t> se{6, 9, 40}, de{5, 8, 16}, box{5, 7, 12};
  const std::int64_t so = (1 * 9 + 2) * 40 + 3, dof = (0 * 8 + 1) * 16 + 2;
  std::vector<std::uint16_t> src(6 * 9 * 40), dst(5 * 8 * 16, 0xFFFF), want = dst;
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint16_t>(i * 2654435761u);
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 7; ++b)
      for (int c = 0; c < 12; ++c)
        want[static_cast<std::size_t>(dof + (a * 8 + b) * 16 + c)] =
            src[static_cast<std::size_t>(so + (a * 9 + b) * 40 + c)];
  DeviceBuffer s, d;
  ASSERT_TRUE(s.allocate(src.size() * 2).ok);
  ASSERT_TRUE(d.allocate(dst.size() * 2).ok);
  ASSERT_EQ(cudaMemcpy(s.data(), src.data(), src.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d.data(), dst.data(), dst.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  const Status st = copy_box(s.as<std::uint16_t>() + so, {9 * 40, 40, 1}, d.as<std::uint16_t>() + dof,
                             {8 * 16, 16, 1}, box, 2, nullptr);
  ASSERT_TRUE(st.ok) << st.message;
  ASSERT_EQ(cudaMemcpy(dst.data(), d.data(), dst.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(dst, want);
}

}  // namespace
}  // namespace overlapsim::kernels::redistribution
