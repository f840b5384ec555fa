#include "sim/trace/chrome_trace.hpp"

#include <fmt/format.h>

#include <map>
#include <set>
#include <vector>

#include "config/text.hpp"

namespace overlapsim::sim {
namespace {

constexpr int kFabricPid =
    1 << 30;  // after every rank (pid = rank + 1); pid 0 is the idle task in system traces
constexpr int kLanesPerStream = 100;  // tid = stream * kLanesPerStream + lane
constexpr std::size_t kMaxLinkSamples = 2000;

int pid_of(int rank) { return rank + 1; }

std::string micros(double seconds) { return fmt::format("{:.3f}", seconds * 1e6); }

}  // namespace

std::string json_escape(std::string_view text) {
  // JSON is UTF-8: a name with stray bytes (however it got here) must not make the whole
  // trace unparseable.
  const std::string valid =
      config::is_valid_utf8(text) ? std::string() : config::to_valid_utf8(text);
  if (!valid.empty()) text = valid;
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<int>(static_cast<unsigned char>(c)));
        else
          out += c;
    }
  }
  return out;
}

std::string chrome_trace_json(const Timeline& timeline, const StepResult& result,
                              std::string_view title) {
  std::vector<std::string> events;
  // Processes: one per recorded rank, labelled with the ranks it stands for.
  std::map<int, int> multiplicity;
  for (const auto& r : result.ranks) multiplicity[r.rank] = r.multiplicity;
  std::set<int> ranks;
  for (const auto& op : timeline.ops) ranks.insert(op.rank);
  for (int rank : ranks) {
    const int m = multiplicity.count(rank) ? multiplicity[rank] : 1;
    const std::string label = m > 1 ? fmt::format("rank {} (stands for {} ranks)", rank, m)
                                    : fmt::format("rank {}", rank);
    events.push_back(
        fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"{}"}}}})",
                    pid_of(rank), json_escape(label)));
    events.push_back(fmt::format(
        R"({{"name":"process_sort_index","ph":"M","pid":{},"args":{{"sort_index":{}}}}})",
        pid_of(rank), pid_of(rank)));
  }

  // Slices, each on the first lane of its stream that is free at its start.
  std::map<std::pair<int, int>, std::vector<double>> lane_end;  // (rank, stream) -> lanes
  std::set<std::pair<int, int>> named;                          // (pid, tid) with a name
  std::vector<std::string> slices;
  for (const auto& op : timeline.ops) {
    const int stream = static_cast<int>(op.stream);
    auto& lanes = lane_end[{op.rank, stream}];
    std::size_t lane = 0;
    while (lane < lanes.size() && lanes[lane] > op.start_s) ++lane;
    if (lane == lanes.size()) lanes.push_back(op.end_s);
    lanes[lane] = op.end_s;
    const int tid = stream * kLanesPerStream + static_cast<int>(lane);
    if (named.insert({pid_of(op.rank), tid}).second) {
      const std::string thread =
          lane == 0 ? to_string(op.stream) : fmt::format("{} #{}", to_string(op.stream), lane + 1);
      events.push_back(fmt::format(
          R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":"{}"}}}})",
          pid_of(op.rank), tid, json_escape(thread)));
      events.push_back(fmt::format(
          R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
          pid_of(op.rank), tid, tid));
    }
    const bool comm = op.kind == OpKind::Collective || op.kind == OpKind::SendRecv;
    std::string args = comm ? fmt::format(R"("bytes":{},"waited_us":{})", op.bytes,
                                          micros(op.start_s - op.ready_s))
                            : fmt::format(R"("flops":{:.6g},"bytes":{})", op.flops, op.bytes);
    slices.push_back(fmt::format(
        R"({{"name":"{}","cat":"{}","ph":"X","ts":{},"dur":{},"pid":{},"tid":{},"args":{{{}}}}})",
        json_escape(op.name), to_string(op.kind), micros(op.start_s), micros(op.end_s - op.start_s),
        pid_of(op.rank), tid, args));
  }

  // Link-class counters: bandwidth carried between consecutive samples.
  if (!timeline.link_samples.empty() && !timeline.link_classes.empty()) {
    events.push_back(fmt::format(
        R"j({{"name":"process_name","ph":"M","pid":{},"args":{{"name":"fabric: GB/s carried per link class"}}}})j",
        kFabricPid));
    // Cumulative counts, so keeping every k-th sample (and the last) gives the average
    // rate over each longer interval: at most kMaxLinkSamples points per track.
    std::vector<LinkSample> samples;
    const std::size_t n = timeline.link_samples.size();
    const std::size_t stride = (n + kMaxLinkSamples - 1) / kMaxLinkSamples;
    for (std::size_t i = 0; i < n; i += stride) samples.push_back(timeline.link_samples[i]);
    if ((n - 1) % stride != 0) samples.push_back(timeline.link_samples.back());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      for (std::size_t c = 0; c < timeline.link_classes.size(); ++c) {
        double gbps = 0;
        if (i + 1 < samples.size()) {
          const double dt = samples[i + 1].t_s - samples[i].t_s;
          const double db = samples[i + 1].bytes.at(c) - samples[i].bytes.at(c);
          if (dt > 0) gbps = db / dt / 1e9;
        }
        events.push_back(fmt::format(
            R"({{"name":"{}","ph":"C","ts":{},"pid":{},"args":{{"GB/s":{:.6g}}}}})",
            json_escape(timeline.link_classes[c]), micros(samples[i].t_s), kFabricPid, gbps));
        if (c < timeline.link_capacity_Bps.size() && timeline.link_capacity_Bps[c] > 0)
          events.push_back(fmt::format(
              R"({{"name":"{} utilisation","ph":"C","ts":{},"pid":{},"args":{{"%":{:.6g}}}}})",
              json_escape(timeline.link_classes[c]), micros(samples[i].t_s), kFabricPid,
              100 * gbps * 1e9 / timeline.link_capacity_Bps[c]));
      }
    }
  }

  std::string out = fmt::format(
      "{{\"displayTimeUnit\":\"ms\",\"otherData\":{{\"title\":\"{}\",\"design\":\"{}\","
      "\"step_time_s\":{:.9g}}},\n\"traceEvents\":[\n",
      json_escape(title), json_escape(result.design), result.step_time_s);
  bool first = true;
  for (const auto* list : {&events, &slices})
    for (const auto& e : *list) {
      if (!first) out += ",\n";
      out += e;
      first = false;
    }
  out += "\n]}\n";
  return out;
}

}  // namespace overlapsim::sim
