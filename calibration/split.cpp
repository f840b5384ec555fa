#include "calibration/split.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "calibration/csv.hpp"

namespace overlapsim::calibration {
namespace {

double work_of(const Measurement& m) {
  if (is_collective_op(m.op)) return static_cast<double>(m.bytes);
  return 2.0 * static_cast<double>(m.m) * static_cast<double>(m.n) * static_cast<double>(m.k);
}

std::string time_us(double s) { return fmt::format("{:.2f}", s * 1e6); }

}  // namespace

std::string split_group(const Measurement& m) {
  if (is_collective_op(m.op)) {
    const int ctas = effective_ctas(m);
    return ctas > 0 ? fmt::format("{}#ctas{}", m.op, ctas) : m.op;
  }
  if (m.op.find("gemv") != std::string::npos) return "gemv";
  if (m.op.find("embedding") != std::string::npos) return "embedding";
  if (m.op.find("gemm") != std::string::npos) return "gemm";
  return "";
}

bool in_heldout_section(const Measurement& m) {
  const std::string section = m.case_key.substr(0, m.case_key.find('/'));
  const std::string suffix = "_heldout";
  return section.size() >= suffix.size() &&
         section.compare(section.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::set<std::string> heldout_keys(const std::vector<Measurement>& rows) {
  std::set<std::string> out;
  for (const auto& r : rows)
    if (!split_group(r).empty() && in_heldout_section(r)) out.insert(split_key(r));
  // group -> key -> work, without the keys a held-out section already holds out
  std::map<std::string, std::map<std::string, double>> groups;
  for (const auto& r : rows) {
    const std::string g = split_group(r);
    if (!g.empty() && !out.count(split_key(r))) groups[g][split_key(r)] = work_of(r);
  }
  for (const auto& [group, keys] : groups) {
    std::vector<std::pair<double, std::string>> order;
    for (const auto& [key, work] : keys) order.emplace_back(work, key);
    std::sort(order.begin(), order.end());
    for (std::size_t i = 0; i < order.size(); ++i)
      if (i % 3 == 1) out.insert(order[i].second);
  }
  return out;
}

std::string format_heldout_csv(const std::vector<Measurement>& rows,
                               const std::set<std::string>& keys) {
  std::string out =
      "gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,"
      "time_max_us,wrong,ctas,case,origin\n";
  for (const auto& r : rows) {
    if (split_group(r).empty() || !keys.count(split_key(r))) continue;
    out += csv_join({r.gpu,
                     r.driver,
                     r.cuda,
                     r.nccl,
                     std::to_string(r.world),
                     r.op,
                     r.design,
                     r.dtype,
                     std::to_string(r.m),
                     std::to_string(r.n),
                     std::to_string(r.k),
                     std::to_string(r.bytes),
                     std::to_string(r.chunks),
                     time_us(r.time_s),
                     time_us(r.time_min_s),
                     time_us(r.time_max_s),
                     std::to_string(r.wrong),
                     std::to_string(r.ctas),
                     r.case_key,
                     r.where()}) +
           "\n";
  }
  return out;
}

}  // namespace overlapsim::calibration
