#include "kernels/bench/tilewise_report.hpp"

#include <cstdio>

#include "config/atomic_file.hpp"

namespace overlapsim::kernels::bench {
namespace {

const char* kDetailHeader =
    "record,gpu,driver,cuda,nccl,dtype,op,m,n,k,world,comm_sms,wait,partition,groups,predicted_s,"
    "measured_s,"
    "pred_error,search,bit_mismatches,fused_mismatches,t_own_s,t_own_signal_s,transport,t_own_"
    "signal_ce_s,signal_scope";

const char* kTimelineHeader = "op,m,n,k,groups,wait,call,rank,step,t_us";

// Header and lines to `path` at once (temp file + rename).
Status write_csv_atomic(const std::string& path, const std::string& header,
                        const std::vector<std::string>& lines) {
  std::string text = header + "\n";
  for (const auto& l : lines) text += l + "\n";
  try {
    config::write_file_atomic(path, text);
  } catch (const std::exception& e) {
    return Status::failure(e.what());
  }
  return Status::success();
}

std::string fmt_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string copy_engine_mode(const TilewiseCandidate& c) { return copy_engine_wait(c); }

}  // namespace

void TilewiseReports::detail(const TilewiseShapeContext& s, const char* record,
                             const TilewiseCandidate& cand, const std::string& search,
                             long long bit_mismatches, long long fused_mismatches) {
  if (s.env.rank() != 0) return;
  const double error =
      cand.measured_s > 0 ? (cand.predicted_s - cand.measured_s) / cand.measured_s : 0;
  const auto signal = s.t_signal_s.find(cand.comm_sms);
  const bool ce = cand.ce_groups > 0;
  std::string line =
      std::string(record) + "," + s.tags.gpu + "," + s.tags.driver + "," + s.tags.cuda + "," +
      s.tags.nccl + "," + to_string(s.bench_case.dtype) + "," + to_string(s.op) + "," +
      std::to_string(s.shape.m) + "," + std::to_string(s.shape.n) + "," +
      std::to_string(s.shape.k) + "," + std::to_string(s.env.world()) + "," +
      std::to_string(cand.comm_sms) + "," +
      (ce ? copy_engine_mode(cand) : std::string(tw::to_string(cand.wait))) + "," +
      tw::partition_string(cand.partition) + "," +
      std::to_string(ce ? cand.ce_groups : static_cast<int>(cand.partition.size())) + "," +
      fmt_double(cand.predicted_s) + "," + fmt_double(cand.measured_s) + "," + fmt_double(error) +
      "," + search + "," + (bit_mismatches < 0 ? "" : std::to_string(bit_mismatches)) + "," +
      (fused_mismatches < 0 ? "" : std::to_string(fused_mismatches)) + "," + fmt_double(s.t_own_s) +
      "," + (signal == s.t_signal_s.end() || ce ? "" : fmt_double(signal->second)) + "," +
      (ce ? "copy_engine" : "nccl") + "," +
      (s.t_signal_ce_s > 0 ? fmt_double(s.t_signal_ce_s) : "") + "," +
      (ce ? (s.ce_system_scope ? "system" : "gpu") : "");
  std::lock_guard<std::mutex> lock(mutex_);
  detail_lines_.push_back(line);
}

Status TilewiseReports::write_detail(const std::string& path) {
  if (path.empty()) return Status::success();
  std::lock_guard<std::mutex> lock(mutex_);
  return write_csv_atomic(path, kDetailHeader, detail_lines_);
}

Status TilewiseReports::add_timeline(
    const TilewiseShapeContext& s, const TilewiseCandidate& best,
    const std::vector<std::vector<std::pair<std::string, double>>>& calls,
    const std::string& path) {
  std::vector<std::string> lines;
  for (std::size_t call = 0; call < calls.size(); ++call)
    for (const auto& [step, t_us] : calls[call])
      lines.push_back(std::string(to_string(s.coll)) + "," + std::to_string(s.shape.m) + "," +
                      std::to_string(s.shape.n) + "," + std::to_string(s.shape.k) + "," +
                      std::to_string(best.ce_groups) + "," + copy_engine_mode(best) + "," +
                      std::to_string(call) + "," + std::to_string(s.env.rank()) + "," + step + "," +
                      fmt_double(t_us));
  std::lock_guard<std::mutex> lock(mutex_);
  timeline_lines_.insert(timeline_lines_.end(), lines.begin(), lines.end());
  return write_csv_atomic(path, kTimelineHeader, timeline_lines_);
}

}  // namespace overlapsim::kernels::bench
