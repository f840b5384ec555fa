// The memory model against the peak memory of real training steps: every configuration
// calibration/memory/peak_memory_probe.py measured (a Llama-style decoder, one H100, bf16
// weights with fp32 main grads and AdamW states, flash attention, recompute none or
// full) goes through estimate_memory, and the estimate of what the caching allocator hands
// out is compared with torch.cuda.max_memory_allocated. Fails when the median error
// exceeds 10% (the target). Prints the table docs/memory.md shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config/config_node.hpp"
#include "workloads/cluster.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/model.hpp"

namespace overlapsim::workloads {
namespace {

const std::string kCsv =
    std::string(OVERLAPSIM_SOURCE_DIR) + "/calibration/data/h100x4-memory/peak_memory.csv";

std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::map<std::string, std::string>> rows;
  std::string line;
  std::vector<std::string> header;
  auto split = [](const std::string& text) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string cell;
    while (std::getline(ss, cell, ',')) out.push_back(cell);
    return out;
  };
  if (!std::getline(in, line)) return rows;
  header = split(line);
  while (std::getline(in, line)) {
    const auto cells = split(line);
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

// The probe's model and run as a model file: one GPU, one micro-batch per step.
ModelSpec probe_model(const std::map<std::string, std::string>& r) {
  const std::string yaml = "name: probe\nkind: transformer\ntransformer:\n  layers: " +
                           r.at("layers") + "\n  hidden: " + r.at("hidden") +
                           "\n  ffn_hidden: " + r.at("ffn_hidden") + "\n  vocab: " + r.at("vocab") +
                           "\n  mlp: swiglu\n  norm: rmsnorm\n  position_embedding: rope\n"
                           "  attention:\n    heads: " +
                           r.at("heads") + "\n    kv_heads: " + r.at("kv_heads") +
                           "\n    head_dim: " + r.at("head_dim") +
                           "\ntraining:\n  seq_len: " + r.at("seq_len") +
                           "\n  global_batch: " + r.at("micro_batch") +
                           "\n  micro_batch: " + r.at("micro_batch") +
                           "\n  precision: bf16\n  grad_precision: fp32\n  recompute: " +
                           r.at("recompute") + "\n  grad_sync: allreduce\nparallelism:\n  tp: 1\n";
  return resolve_for_world(load_model_string(yaml, "probe.yaml"), 1, 1);
}

ClusterSpec one_h100() {
  return parse_cluster(config::ConfigNode::load_string(
      "name: h100\nnodes: 1\ngpus_per_node: 1\ngpu:\n  name: NVIDIA H100 80GB HBM3\n"
      "  memory_bytes: 80GiB\n  source: test\n",
      "h100.yaml"));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

TEST(MemoryValidation, MeasuredPeaksWithinTenPercent) {
  const auto rows = read_csv(kCsv);
  ASSERT_GE(rows.size(), 15u) << kCsv;
  const ClusterSpec gpu = one_h100();
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  std::vector<double> alloc_err, used_err;
  std::cout << std::fixed << std::setprecision(2);
  std::cout << "| hidden | layers | seq | micro-batch | recompute | params | allocated GiB "
               "(measured) | estimate | error | device used GiB (measured) | estimate | error |\n"
               "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& r : rows) {
    ASSERT_EQ(r.at("wrong"), "0") << "a failed probe row";
    const ModelSpec m = probe_model(r);
    const MemoryEstimate est = estimate_memory(m, gpu);
    ASSERT_EQ(est.stages.size(), 1u);
    // The probe's parameter count is the model's.
    EXPECT_DOUBLE_EQ(stage_parameters(m, 0).total(), std::stod(r.at("params")));
    const double measured = std::stod(r.at("max_allocated_bytes"));
    const double allocated = est.stages[0].allocated_bytes();
    const double used = std::stod(r.at("device_used_bytes"));
    const double total = est.stages[0].total_bytes();
    alloc_err.push_back((allocated - measured) / measured);
    used_err.push_back((total - used) / used);
    std::cout << "| " << r.at("hidden") << " | " << r.at("layers") << " | " << r.at("seq_len")
              << " | " << r.at("micro_batch") << " | " << r.at("recompute") << " | "
              << std::stod(r.at("params")) / 1e9 << "B | " << measured / kGiB << " | "
              << allocated / kGiB << " | " << 100 * alloc_err.back() << "% | " << used / kGiB
              << " | " << total / kGiB << " | " << 100 * used_err.back() << "% |\n";
  }
  std::vector<double> abs_alloc, abs_used;
  for (double e : alloc_err) abs_alloc.push_back(std::fabs(e));
  for (double e : used_err) abs_used.push_back(std::fabs(e));
  std::cout << "median |error|: allocated " << 100 * median(abs_alloc) << "%, device used "
            << 100 * median(abs_used) << "%; largest: allocated "
            << 100 * *std::max_element(abs_alloc.begin(), abs_alloc.end()) << "%, device used "
            << 100 * *std::max_element(abs_used.begin(), abs_used.end()) << "%\n";
  EXPECT_LE(median(abs_alloc), 0.10);
  EXPECT_LE(median(abs_used), 0.10);
}

}  // namespace
}  // namespace overlapsim::workloads
