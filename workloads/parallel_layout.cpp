#include "workloads/parallel_layout.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace overlapsim::workloads {

ParallelLayout::ParallelLayout(int tp, int cp, int dp, int pp, int ep, int etp, int ep_per_node)
    : tp_(tp),
      cp_(cp),
      dp_(dp),
      pp_(pp),
      ep_(ep),
      etp_(etp > 0 ? etp : tp),
      ep_node_(ep_per_node > 0 ? ep_per_node : ep) {
  if (tp < 1 || cp < 1 || dp < 1 || pp < 1 || ep < 1 || etp < 0)
    throw std::invalid_argument(
        fmt::format("parallel layout: tp={} cp={} dp={} pp={} ep={} etp={} (expected all >= 1)", tp,
                    cp, dp, pp, ep, etp));
  if ((tp * cp * dp) % (ep * etp_) != 0)
    throw std::invalid_argument(fmt::format(
        "parallel layout: ep·etp={} does not divide tp·cp·dp={}", ep * etp_, tp * cp * dp));
  if (ep_per_node < 0 || ep_ % ep_node_ != 0 || (ep_node_ < ep_ && etp_ != 1))
    throw std::invalid_argument(fmt::format(
        "parallel layout: {} EP ranks per node with ep={} etp={} (expected a divisor of ep, "
        "and etp 1 where it is below ep)",
        ep_per_node, ep, etp_));
}

int ParallelLayout::ep_ranks_per_node(int gpus_per_node) const {
  if (gpus_per_node < 1)
    throw std::invalid_argument(
        fmt::format("parallel layout: {} GPUs per node (expected >= 1)", gpus_per_node));
  // EP groups are the ranks first + etp·i, i < ep, first = a stage's block start + a
  // multiple of etp·ep (coord()).
  const int block = tp_ * cp_ * dp_;
  const int span = etp_ * (ep_ - 1) + 1;  // first to last member
  bool inside = true;
  for (int s = 0; s < pp_ && inside; ++s)
    for (int first = block * s; first < block * (s + 1) && inside; first += etp_ * ep_)
      for (int t = 0; t < etp_ && inside; ++t)
        inside = (first + t) / gpus_per_node == (first + t + span - 1) / gpus_per_node;
  if (inside) return ep_;
  const bool whole_nodes = etp_ == 1 && ep_ % gpus_per_node == 0 && block % gpus_per_node == 0;
  if (!whole_nodes)
    throw std::invalid_argument(fmt::format(
        "parallel layout: EP groups of {} ranks (etp {}) straddle nodes of {} GPUs (expected "
        "each group inside one node, or etp 1 with ep and tp·cp·dp multiples of the node)",
        ep_, etp_, gpus_per_node));
  return gpus_per_node;
}

RankCoord ParallelLayout::coord(int rank) const {
  if (rank < 0 || rank >= world_size())
    throw std::invalid_argument(
        fmt::format("parallel layout: rank {} outside 0..{}", rank, world_size() - 1));
  RankCoord c;
  c.tp = rank % tp_;
  int rest = rank / tp_;
  c.cp = rest % cp_;
  rest /= cp_;
  c.dp = rest % dp_;
  c.pp = rest / dp_;
  const int j = rank - tp_ * cp_ * dp_ * c.pp;  // place in the stage
  c.etp = j % etp_;
  c.ep = (j / etp_) % ep_;
  c.edp = j / (etp_ * ep_);
  return c;
}

int ParallelLayout::rank_of(int tp, int cp, int dp, int pp) const {
  return tp + tp_ * (cp + cp_ * (dp + dp_ * pp));
}

int ParallelLayout::group_size(const std::string& family) const {
  if (family == "tp") return tp_;
  if (family == "cp") return cp_;
  if (family == "dp") return dp_ * cp_;
  if (family == "pp") return pp_;
  if (family == "ep") return ep_;
  if (family == "etp") return etp_;
  if (family == "edp") return edp();
  if (family == "ep_node") return ep_node_;
  if (family == "ep_rail") return ep_ / ep_node_;
  if (family == "embd") return pp_ > 1 ? 2 : 1;
  throw std::invalid_argument(fmt::format("parallel layout: unknown family '{}'", family));
}

int ParallelLayout::leader(const std::string& family, int rank) const {
  RankCoord c = coord(rank);
  const int block = tp_ * cp_ * dp_;  // ranks per pipeline stage
  if (family == "tp") return rank - c.tp;
  if (family == "cp") return rank - tp_ * c.cp;
  if (family == "dp") return c.tp + block * c.pp;
  if (family == "pp" || family == "embd") return rank - block * c.pp;
  if (family == "etp") return rank - c.etp;
  if (family == "ep") return rank - etp_ * c.ep;
  if (family == "edp") return rank - etp_ * ep_ * c.edp;
  if (family == "ep_node") return rank - etp_ * (c.ep % ep_node_);
  if (family == "ep_rail") return rank - etp_ * (c.ep - c.ep % ep_node_);
  throw std::invalid_argument(fmt::format("parallel layout: unknown family '{}'", family));
}

std::vector<int> ParallelLayout::group(const std::string& family, int rank) const {
  const int first = leader(family, rank);
  const int block = tp_ * cp_ * dp_;
  std::vector<int> out;
  if (family == "tp") {
    for (int i = 0; i < tp_; ++i) out.push_back(first + i);
  } else if (family == "cp") {
    for (int i = 0; i < cp_; ++i) out.push_back(first + tp_ * i);
  } else if (family == "dp") {
    for (int j = 0; j < cp_ * dp_; ++j) out.push_back(first + tp_ * j);
  } else if (family == "pp") {
    for (int s = 0; s < pp_; ++s) out.push_back(first + block * s);
  } else if (family == "embd") {
    out.push_back(first);
    if (pp_ > 1) out.push_back(first + block * (pp_ - 1));
  } else if (family == "etp") {
    for (int i = 0; i < etp_; ++i) out.push_back(first + i);
  } else if (family == "ep") {
    for (int i = 0; i < ep_; ++i) out.push_back(first + etp_ * i);
  } else if (family == "edp") {
    for (int i = 0; i < edp(); ++i) out.push_back(first + etp_ * ep_ * i);
  } else if (family == "ep_node") {
    for (int i = 0; i < ep_node_; ++i) out.push_back(first + etp_ * i);
  } else if (family == "ep_rail") {
    for (int i = 0; i < ep_ / ep_node_; ++i) out.push_back(first + etp_ * ep_node_ * i);
  }
  return out;
}

std::vector<sim::CommGroup> ParallelLayout::all_groups(const std::string& family) const {
  std::vector<sim::CommGroup> out;
  std::vector<char> seen(world_size(), 0);
  for (int r = 0; r < world_size(); ++r) {
    int first = leader(family, r);
    if (seen[first]) continue;
    seen[first] = 1;
    out.push_back({family, group(family, first)});
  }
  return out;
}

int ParallelLayout::group_index(const std::string& family, int rank) const {
  // Groups are numbered in order of their leaders (lowest ranks); each closed form below
  // counts the leaders of lower rank.
  RankCoord c = coord(rank);
  if (family == "tp") return rank / tp_;
  if (family == "cp") return c.tp + tp_ * (c.dp + dp_ * c.pp);
  if (family == "dp") return c.tp + tp_ * c.pp;
  if (family == "pp" || family == "embd") return rank % (tp_ * cp_ * dp_);
  if (family == "etp") return rank / etp_;
  if (family == "ep") return c.etp + etp_ * (c.edp + edp() * c.pp);
  if (family == "edp") return c.etp + etp_ * (c.ep + ep_ * c.pp);
  // Split EP groups have etp 1 (the constructor), so they are runs of ep consecutive ranks
  // and their node and rail groups order as (EP group, node block) and (EP group, rail).
  const int ep_group = c.etp + etp_ * (c.edp + edp() * c.pp);
  if (family == "ep_node") return ep_group * (ep_ / ep_node_) + c.ep / ep_node_;
  if (family == "ep_rail") return ep_group * ep_node_ + c.ep % ep_node_;
  throw std::invalid_argument(fmt::format("parallel layout: unknown family '{}'", family));
}

}  // namespace overlapsim::workloads
