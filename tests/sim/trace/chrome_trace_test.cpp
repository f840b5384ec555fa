#include "sim/trace/chrome_trace.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/sim/exec/exec_test_util.hpp"

namespace overlapsim::sim {
namespace {

using namespace overlapsim::sim::testing;

struct Traced {
  StepResult result;
  Timeline timeline;
};

// Two ranks: compute, a DP all-reduce beside compute, and two overlapping sends from
// rank 0 to rank 1 (not serialised, so they need two lanes).
Traced traced_step() {
  StepGraph step = numbered_step(2, {{"dp", {0, 1}}});
  for (int r = 0; r < 2; ++r) {
    auto& prog = step.ranks[r];
    const OpVertex a = add(prog, compute_op("L0.fwd.gemm", 1.0));
    const OpVertex c = add(prog, collective_op("grad \"bucket\" 0", 0, 2.0), {a});
    const OpVertex b = add(prog, compute_op("L0.bwd.gemm", 1.0), {a});
    add(prog, p2p_op(r == 0 ? "send_a" : "recv_a", r == 0, 1 - r, 1.0), {b});
    add(prog, p2p_op(r == 0 ? "send_b" : "recv_b", r == 0, 1 - r, 1.0), {b});
    add(prog, compute_op("opt", 0.5), {c});
  }
  UnitExecRig rig(2, 8);
  ExecOptions opts;
  opts.record_timeline = true;
  opts.link_classes = {"nvlink", "network"};
  opts.link_capacity_Bps = {1e12, 0};  // network capacity unknown: no utilisation track
  double carried = 0;
  opts.link_bytes = [&] {
    carried += 1e6;
    return std::vector<double>{carried, 0};
  };
  std::vector<CollectiveRequest> log;
  StepExecutor exec(step, rig.model, rig.net, opts);
  exec.set_collective_launcher(ClosedFormLauncher{&rig.sim, &log});
  SequentialDesign design;
  Traced t;
  t.result = exec.run(design);
  t.timeline = exec.timeline();
  return t;
}

TEST(ChromeTrace, ParsesAsJsonWithTracksPerRankAndStream) {
  const Traced t = traced_step();
  const std::string text = chrome_trace_json(t.timeline, t.result, "test \"run\"");
  const nlohmann::json trace = nlohmann::json::parse(text);
  ASSERT_TRUE(trace.contains("traceEvents"));
  EXPECT_EQ(trace["otherData"]["design"], "sequential");
  std::set<std::string> processes, threads, slices, counters;
  int x_events = 0;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "process_name") processes.insert(e["args"]["name"]);
    if (ph == "M" && e["name"] == "thread_name") threads.insert(e["args"]["name"]);
    if (ph == "X") {
      ++x_events;
      slices.insert(e["name"]);
      EXPECT_GE(e["dur"].get<double>(), 0);
    }
    if (ph == "C") counters.insert(e["name"]);
  }
  EXPECT_EQ(x_events, 12);  // 6 ops on each of 2 ranks
  EXPECT_TRUE(processes.count("rank 0"));
  EXPECT_TRUE(processes.count("rank 1"));
  EXPECT_TRUE(threads.count("compute"));
  EXPECT_TRUE(threads.count("dp-comm"));
  EXPECT_TRUE(threads.count("pp-comm"));
  EXPECT_TRUE(threads.count("pp-comm #2"));  // the two sends overlap
  EXPECT_TRUE(slices.count("grad \"bucket\" 0"));
  EXPECT_EQ(counters, (std::set<std::string>{"nvlink", "nvlink utilisation", "network"}));
}

TEST(ChromeTrace, SliceTimesAreMicroseconds) {
  const Traced t = traced_step();
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace_json(t.timeline, t.result, "x"));
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "X" && e["name"] == "L0.bwd.gemm") {
      EXPECT_NEAR(e["ts"].get<double>(), 1000.0, 1e-6);
      EXPECT_NEAR(e["dur"].get<double>(), 1000.0, 1e-6);
    }
}

TEST(ChromeTrace, SameStepSameBytes) {
  const Traced a = traced_step();
  const Traced b = traced_step();
  EXPECT_EQ(chrome_trace_json(a.timeline, a.result, "x"),
            chrome_trace_json(b.timeline, b.result, "x"));
}

TEST(ChromeTrace, LinkCountersAreDownsampledKeepingAverages) {
  Timeline t;
  t.link_classes = {"network"};
  for (int i = 0; i <= 10000; ++i) t.link_samples.push_back({i * 1e-3, {i * 2e6}});  // 2 GB/s
  StepResult r;
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace_json(t, r, "x"));
  int counters = 0;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "C") {
      ++counters;
      const double v = e["args"]["GB/s"];
      EXPECT_TRUE(std::abs(v - 2.0) < 1e-9 || v == 0) << v;  // the last point reads 0
    }
  EXPECT_LE(counters, 2001);
  EXPECT_GE(counters, 1000);
}

TEST(ChromeTrace, EscapesJsonSpecials) {
  EXPECT_EQ(json_escape("a\"b\\c\n\x01"), "a\\\"b\\\\c\\n\\u0001");
}

}  // namespace
}  // namespace overlapsim::sim
