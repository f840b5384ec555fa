#include "sim/overlap/pair_class.hpp"

#include <fmt/format.h>

#include <cctype>

#include "sim/collectives/collective.hpp"

namespace overlapsim::sim {
namespace {

// "L12", "mb3", "chunk1", "7": a field that numbers a layer, microbatch or chunk.
bool numbering_field(const std::string& f) {
  std::size_t i = 0;
  for (const char* prefix : {"chunk", "mb", "L", "v"}) {
    const std::string p(prefix);
    if (f.compare(0, p.size(), p) == 0 && f.size() > p.size()) {
      i = p.size();
      break;
    }
  }
  if (i >= f.size()) return false;
  for (std::size_t k = i; k < f.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(f[k]))) return false;
  return true;
}

}  // namespace

std::string op_base_name(const std::string& name) {
  std::string out;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    const std::string field = name.substr(start, end - start);
    if (!field.empty() && !numbering_field(field)) out += (out.empty() ? "" : ".") + field;
    start = end + 1;
  }
  return out.empty() ? name : out;
}

std::string pair_class(const StepGraph& step, int program, OpVertex compute) {
  const OpGraph& g = step.ranks.at(static_cast<std::size_t>(program)).graph;
  const OpNode& op = g[compute];
  const auto c = static_cast<OpVertex>(op.pair_partner);
  const OpNode& comm = g[c];
  const bool producer = boost::edge(compute, c, g).second;
  const std::string family =
      comm.comm_group >= 0 && comm.comm_group < static_cast<int>(step.groups.size())
          ? step.groups[static_cast<std::size_t>(comm.comm_group)].family
          : std::string("?");
  return fmt::format("{} {} {} {}", family, to_string(comm.collective),
                     producer ? "after" : "before", op_base_name(op.name));
}

}  // namespace overlapsim::sim
