#include "sim/collectives/reference_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "config/error.hpp"
#include "config/units.hpp"

namespace overlapsim::sim {

const std::vector<config::ParamDoc>& reference_table_params() {
  static const std::vector<config::ParamDoc> params = {
      {"format", "format version of this file", "", "1"},
      {"name", "the table's name (the file name without .yaml)", "", ""},
      {"op", "allreduce, allgather, reducescatter, alltoall or broadcast", "", ""},
      {"cluster", "cluster YAML of the machine, relative to this file", "", "path"},
      {"nodes", "hosts that ran the test", "", "count"},
      {"ranks_per_node", "GPUs per host that ran the test", "", "count"},
      {"column", "which nccl-tests time column the points are: out-of-place or in-place", "", ""},
      {"source", "where the table was published", "", ""},
      {"points", "the table's rows: size and time (and busbw) as printed", "", ""},
  };
  return params;
}

const std::vector<config::ParamDoc>& reference_source_params() {
  static const std::vector<config::ParamDoc> params = {
      {"title", "title of the page, issue or document", "", ""},
      {"url", "address of the publication", "", ""},
      {"date", "date of the post or publication, YYYY-MM-DD", "", ""},
      {"system", "GPUs, NICs and their rate, NCCL version, as the source states them", "", ""},
  };
  return params;
}

const std::vector<config::ParamDoc>& reference_point_params() {
  static const std::vector<config::ParamDoc> params = {
      {"bytes", "nccl-tests size", "", "bytes"},
      {"time", "nccl-tests time of the column", "", "s"},
      {"busbw", "nccl-tests busbw, as printed (not compared)", "none", "bytes/s"},
  };
  return params;
}

ReferenceTable parse_reference_table(const config::ConfigNode& root) {
  if (!root.is_map()) root.fail("expected a map of keys (format, name, op, cluster, ...)");
  root.check_keys(reference_table_params());
  ReferenceTable t;
  t.file = root.file();
  if (root.get_int("format") != 1) root.fail_key("format", "unsupported format (expected 1)");
  t.name = root.get_string("name");
  const std::string op =
      root.get_enum("op", {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast"});
  t.op = *parse_collective_op(op);
  const std::filesystem::path here = std::filesystem::path(root.file()).parent_path();
  const std::string cluster = root.get_string("cluster");
  t.cluster_file = (here / cluster).lexically_normal().string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(t.cluster_file, ec))
    root.fail_key("cluster", fmt::format("'{}' is not a readable file (expected a cluster YAML "
                                         "relative to this file)",
                                         cluster));
  t.nodes = root.get_positive_int32("nodes");
  t.ranks_per_node = root.get_positive_int32("ranks_per_node");
  t.column = root.get_enum("column", {"out-of-place", "in-place"});

  const config::ConfigNode src = root.child("source");
  if (!src.is_map()) src.fail("expected a map (title, url, date, system)");
  src.check_keys(reference_source_params());
  t.source = {src.get_string("title"), src.get_string("url"), src.get_string("date"),
              src.get_string("system")};

  const config::ConfigNode points = root.child("points");
  if (!points.is_sequence() || points.size() == 0)
    points.fail("expected a non-empty list of {bytes, time} rows");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const config::ConfigNode p = points.at(i);
    if (!p.is_map()) p.fail("expected a map {bytes: SIZE, time: DURATION}");
    p.check_keys(reference_point_params());
    ReferencePoint pt;
    pt.bytes = p.get_bytes("bytes");
    if (pt.bytes == 0) p.fail_key("bytes", "0 (expected a size > 0)");
    pt.time_s = p.get_duration_s("time");
    if (!(pt.time_s > 0)) p.fail_key("time", "not positive (expected a duration > 0)");
    if (p.has("busbw")) {
      // nccl-tests prints 0.00 for the smallest sizes: zero is a valid transcription.
      const config::ConfigNode bw = p.child("busbw");
      const auto v = config::parse_bandwidth_Bps(bw.as_string());
      if (!v || *v < 0)
        p.fail_key("busbw", fmt::format("'{}' is not a bandwidth (expected {})", bw.as_string(),
                                        config::kExpectedBandwidth));
      pt.busbw_Bps = *v;
    }
    t.points.push_back(pt);
  }
  std::stable_sort(
      t.points.begin(), t.points.end(),
      [](const ReferencePoint& a, const ReferencePoint& b) { return a.bytes < b.bytes; });
  return t;
}

ReferenceTable load_reference_table(const std::string& path) {
  return parse_reference_table(config::ConfigNode::load_file(path));
}

std::vector<ReferenceTable> load_reference_tables(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw config::ConfigError(
        fmt::format("{}: not a folder (expected a folder of reference table YAML files)", dir));
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".yaml")
      files.push_back(entry.path().string());
  if (ec)
    throw config::ConfigError(fmt::format("{}: cannot list the folder ({})", dir, ec.message()));
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw config::ConfigError(
        fmt::format("{}: no *.yaml tables (expected reference tables, README.md)", dir));
  std::vector<ReferenceTable> tables;
  for (const auto& f : files) tables.push_back(load_reference_table(f));
  return tables;
}

}  // namespace overlapsim::sim
