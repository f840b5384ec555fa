// StepExecutor's communication: the members of a collective (or the two sides of a
// send) meet, the launcher starts the transfer, and the symmetric images of folded ranks
// go out as background traffic.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>

#include "sim/exec/step_executor_impl.hpp"

namespace overlapsim::sim {

void StepExecutor::Impl::complete_later(Simulator::Callback fn) {
  if (launching)
    simulator().schedule(0.0, std::move(fn));
  else
    fn();
}

double StepExecutor::Impl::sms_free_at(int p, OpVertex v) {
  const ProgramState& ps = programs[p];
  if (ps.sm_holder == executor_detail::kNoOp) return now();
  if (!ps.sm_holder_is_gemm && op(p, v).high_priority) return now();
  const double k = ps.sm_holder_kernel_s;
  // The kernel boundary at or after now; at the op's time alone or later, the op's end.
  const double boundary =
      ps.sm_holder_start_s + std::ceil((now() - ps.sm_holder_start_s) / k * (1 - 1e-12)) * k;
  if (boundary >= ps.sm_holder_alone_end_s * (1 - 1e-12))
    return std::numeric_limits<double>::infinity();
  return boundary;
}

void StepExecutor::Impl::run_comm(int p, OpVertex v) {
  if (options.comm_waits_for_gemm_kernel || options.comm_waits_for_memory_kernel) {
    OpState& st = programs[p].ops[v];
    if (st.ready_s < 0) st.ready_s = now();
    const double at = sms_free_at(p, v);
    if (at > now()) {
      if (std::isinf(at))
        programs[p].waiting_for_sms.push_back(v);
      else
        simulator().schedule(at - now(), [this, p, v] { start_comm(p, v); });
      return;
    }
  }
  start_comm(p, v);
}

void StepExecutor::Impl::start_comm(int p, OpVertex v) {
  const OpNode& node = programs[p].program->graph[v];
  if (node.kind == OpKind::SendRecv) {
    join_p2p(p, v);
    return;
  }
  join_collective(p, v, node.comm_bytes, 0,
                  [this, p, u = static_cast<std::uint32_t>(v)] { finish(p, u); });
}

void StepExecutor::Impl::launch_comm_part(int p, OpVertex v, std::uint64_t bytes, int part,
                                          Callback on_done) {
  if (part < 1) throw std::logic_error("launch_comm_part: parts are numbered from 1");
  join_collective(p, v, bytes, part, std::move(on_done));
}

void StepExecutor::Impl::join_collective(int p, OpVertex v, std::uint64_t bytes, int part,
                                         Callback on_done) {
  ProgramState& ps = programs[p];
  const OpNode& node = ps.program->graph[v];
  if (node.kind != OpKind::Collective)
    throw std::logic_error(fmt::format("collective launch of non-collective op '{}'", node.name));
  const int g = node.comm_group;
  const auto& members = plans().groups[g].simulated;
  if (std::find(members.begin(), members.end(), p) == members.end())
    throw std::invalid_argument(
        fmt::format("step: rank {} op '{}' uses group {} ({}) without being in it",
                    ps.program->rank, node.name, g, step.groups[g].family));
  OpState& st = ps.ops[v];
  if (st.ready_s < 0) st.ready_s = now();
  // The k-th collective of every member on a communicator meets (NCCL's issue-order rule);
  // parts of one op meet the same part on the other members.
  const auto key = (static_cast<std::uint64_t>(g) << 40) |
                   (static_cast<std::uint64_t>(st.instance) << 12) |
                   static_cast<std::uint64_t>(part & 0xfff);
  if (members.size() == 1) {  // the only simulated member (folded TP peers): met at once
    const std::uint32_t slot = take_launch();
    launches[slot].rv.members.push_back({p, v, bytes, std::move(on_done)});
    launch_collective(g, slot);
    return;
  }
  Rendezvous& rv = pending_collectives[key];
  rv.members.push_back({p, v, bytes, std::move(on_done)});
  if (rv.members.size() == members.size()) {
    const std::uint32_t slot = take_launch();
    launches[slot].rv = std::move(rv);
    pending_collectives.erase(key);
    launch_collective(g, slot);
  }
}

std::uint32_t StepExecutor::Impl::take_launch() {
  if (free_launches.empty()) {
    launches.emplace_back();
    return static_cast<std::uint32_t>(launches.size() - 1);
  }
  const std::uint32_t slot = free_launches.back();
  free_launches.pop_back();
  return slot;
}

void StepExecutor::Impl::finish_launch(std::uint32_t slot) {
  Launch& launch = launches[slot];
  if (!launch.memory_loss0_s.empty()) {
    // The work the slowest member lost to memory-bound ops while the transfer ran: the
    // collective ends that much later, measured again over the extension (as a compute
    // op's segments are), at most three times.
    double lost = 0;
    for (std::size_t i = 0; i < launch.rv.members.size(); ++i) {
      const int p = launch.rv.members[i].program;
      lost = std::max(lost, memory_loss_s(p) - launch.memory_loss0_s[i]);
      launch.memory_loss0_s[i] = memory_loss_s(p);
    }
    if (lost > 1e-12 && launch.extensions++ < 3) {
      simulator().schedule(lost, [this, slot] { finish_launch(slot); });
      return;
    }
  }
  for (auto& m : launch.rv.members) comm_ended(m.program);
  for (auto& m : launch.rv.members) {
    programs[m.program].comm_intervals.emplace_back(launch.t, now());
    m.on_done();
  }
  launch.rv.members.clear();
  free_launches.push_back(slot);
}

void StepExecutor::Impl::launch_collective(int g, std::uint32_t slot) {
  Launch& launch = launches[slot];
  const Rendezvous& rv = launch.rv;
  const RendezvousMember& lead = rv.members.front();
  const OpNode& first = programs[lead.program].program->graph[lead.op];
  const double t = now();
  for (const auto& m : rv.members) {
    const OpNode& n = programs[m.program].program->graph[m.op];
    if (n.collective != first.collective || m.bytes != lead.bytes)
      throw std::invalid_argument(fmt::format(
          "step: collective mismatch on group {} ({}): rank {} '{}' ({} {} B) meets rank {} '{}' "
          "({} {} B)",
          g, step.groups[g].family, programs[lead.program].program->rank, first.name,
          to_string(first.collective), lead.bytes, programs[m.program].program->rank, n.name,
          to_string(n.collective), m.bytes));
    OpState& st = programs[m.program].ops[m.op];
    if (st.launch_s < 0) st.launch_s = t;
    comm_started(m.program);
  }
  ++collectives;
  launch.t = t;
  launch.extensions = 0;
  launch.memory_loss0_s.clear();
  if (!options.collective_memory_slowdown.empty())
    for (const auto& m : rv.members) launch.memory_loss0_s.push_back(memory_loss_s(m.program));
  const std::function<void()> on_done = [this, slot] {
    complete_later([this, slot] { finish_launch(slot); });
  };
  // A coordinating runtime starts the transfer only after its wait; the members count as
  // communicating from the rendezvous on.
  const CollectiveOp op = first.collective;
  const std::uint64_t bytes = lead.bytes;
  if (first.launch_delay_s > 0) {
    simulator().schedule(first.launch_delay_s,
                         [this, g, op, bytes, on_done] { start_transfer(g, op, bytes, on_done); });
    return;
  }
  start_transfer(g, op, bytes, on_done);
}

void StepExecutor::Impl::start_transfer(int g, CollectiveOp op, std::uint64_t bytes,
                                        const std::function<void()>& on_done) {
  const CommGroup& group = step.groups[g];
  if (group.ranks.size() < 2 || bytes == 0) {
    simulator().schedule(0.0, on_done);
    return;
  }
  CollectiveRequest& req = request_scratch;
  req.op = op;
  req.algo = Algorithm::Auto;
  req.ranks.assign(group.ranks.begin(), group.ranks.end());
  req.bytes = bytes;
  req.root = 0;
  req.peer = 1;
  launching = true;
  launcher(req, on_done);
  for (int image : plans().groups[g].images) {
    CollectiveRequest& img = next_image(req);
    const auto& ranks = step.groups[image].ranks;
    img.ranks.assign(ranks.begin(), ranks.end());
    ++background;
  }
  launch_images();
  launching = false;
}

CollectiveRequest& StepExecutor::Impl::next_image(const CollectiveRequest& like) {
  if (num_images == images_scratch.size()) images_scratch.emplace_back();
  CollectiveRequest& img = images_scratch[num_images++];
  img.op = like.op;
  img.algo = like.algo;
  img.bytes = like.bytes;
  img.root = like.root;
  img.peer = like.peer;
  return img;
}

void StepExecutor::Impl::launch_images() {
  const std::span<const CollectiveRequest> images(images_scratch.data(), num_images);
  num_images = 0;
  if (background_launcher) {
    if (!images.empty()) background_launcher(images);
  } else {
    for (const CollectiveRequest& req : images) launcher(req, [] {});
  }
}

void StepExecutor::Impl::join_p2p(int p, OpVertex v) {
  ProgramState& ps = programs[p];
  const OpNode& node = ps.program->graph[v];
  const int self = ps.program->rank;
  const int peer_rep = rep(node.peer_rank);
  if (plans().program_of_rank[peer_rep] < 0)
    throw std::invalid_argument(fmt::format(
        "step: rank {} op '{}' talks to rank {}, whose representative {} is not simulated", self,
        node.name, node.peer_rank, peer_rep));
  const std::pair<int, int> pair =
      node.is_send ? std::make_pair(rep(self), peer_rep) : std::make_pair(peer_rep, rep(self));
  const int k = node.is_send ? sends_issued[pair]++ : recvs_issued[pair]++;
  const auto key = std::make_tuple(pair.first, pair.second, k);
  P2pMatch& m = pending_p2p[key];
  if (node.is_send) {
    m.send_program = p;
    m.send_op = v;
  } else {
    m.recv_program = p;
    m.recv_op = v;
  }
  if (m.send_program >= 0 && m.recv_program >= 0) {
    const P2pMatch match = m;
    pending_p2p.erase(key);
    launch_p2p(match);
  }
}

void StepExecutor::Impl::launch_p2p(const P2pMatch& m) {
  const OpNode& send = programs[m.send_program].program->graph[m.send_op];
  const OpNode& recv = programs[m.recv_program].program->graph[m.recv_op];
  if (send.comm_bytes != recv.comm_bytes)
    throw std::invalid_argument(fmt::format("step: send '{}' of {} B meets receive '{}' of {} B",
                                            send.name, send.comm_bytes, recv.name,
                                            recv.comm_bytes));
  programs[m.send_program].ops[m.send_op].launch_s = now();
  programs[m.recv_program].ops[m.recv_op].launch_s = now();
  comm_started(m.send_program);
  comm_started(m.recv_program);
  ++collectives;
  // The sender's real transfer, and the receiver's if folding made them differ.
  std::array<std::pair<int, int>, 2> transfers_at = {
      std::make_pair(programs[m.send_program].program->rank, send.peer_rank),
      std::make_pair(recv.peer_rank, programs[m.recv_program].program->rank)};
  const std::span<const std::pair<int, int>> transfers(transfers_at.data(),
                                                       transfers_at[1] != transfers_at[0] ? 2 : 1);
  std::uint32_t slot;
  if (free_p2p_launches.empty()) {
    slot = static_cast<std::uint32_t>(p2p_launches.size());
    p2p_launches.emplace_back();
  } else {
    slot = free_p2p_launches.back();
    free_p2p_launches.pop_back();
  }
  p2p_launches[slot] = P2pLaunch{m, static_cast<int>(transfers.size()), now()};
  // Captures the executor and the slot only: std::function keeps them without allocating.
  auto on_done = [this, slot] {
    if (--p2p_launches[slot].left > 0) return;
    complete_later([this, slot] {
      const P2pMatch m = p2p_launches[slot].match;
      const double t = p2p_launches[slot].t;
      free_p2p_launches.push_back(slot);
      comm_ended(m.send_program);
      comm_ended(m.recv_program);
      programs[m.send_program].comm_intervals.emplace_back(t, now());
      programs[m.recv_program].comm_intervals.emplace_back(t, now());
      finish(m.send_program, m.send_op);
      finish(m.recv_program, m.recv_op);
    });
  };
  CollectiveRequest& req = request_scratch;
  req.op = CollectiveOp::SendRecv;
  req.algo = Algorithm::Auto;
  req.bytes = send.comm_bytes;
  req.root = 0;
  req.peer = 1;
  launching = true;
  for (const auto& [src, dst] : transfers) {
    if (src == dst || send.comm_bytes == 0) {
      simulator().schedule(0.0, on_done);
      continue;
    }
    req.ranks.assign({src, dst});
    launcher(req, on_done);
  }
  // Images: the same hop in the other pipelines (groups of the send's family).
  if (send.comm_group >= 0 && send.comm_bytes > 0) {
    const auto& ranks = step.groups[send.comm_group].ranks;
    const auto src_it = std::find(ranks.begin(), ranks.end(), transfers.front().first);
    const auto dst_it = std::find(ranks.begin(), ranks.end(), transfers.front().second);
    if (src_it != ranks.end() && dst_it != ranks.end()) {
      const auto si = static_cast<std::size_t>(src_it - ranks.begin());
      const auto di = static_cast<std::size_t>(dst_it - ranks.begin());
      for (int image : plans().groups[send.comm_group].images) {
        const auto& ranks_of = step.groups[image].ranks;
        CollectiveRequest& img = next_image(req);
        img.ranks.assign({ranks_of[si], ranks_of[di]});
        ++background;
      }
      launch_images();
    }
  }
  launching = false;
}

}  // namespace overlapsim::sim
