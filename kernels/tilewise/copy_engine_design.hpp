#pragma once
// Design `tilewise` with transport `copy_engine`: the rank-rotated own GEMM
// (copy_engine_layout.hpp) whose finished groups of other ranks' tiles the GPU's copy engines carry
// to their owners, and whose epilogue reduces the own part as the peers' partials arrive
// (epilogue.cuh OwnerEpilogue). While the GEMM runs, the communication needs no SM:
//   comm stream, per peer group: cuStreamWaitValue32(tile counter >= tiles) and reset,
//     cudaMemcpyAsync(peer receive buffer ← group region) on a peer pointer, then
//     cuStreamWriteValue32(peer's arrived flag ← epoch) into the owner's memory.
//   allreduce adds phase 2: each reduced own group (its counter) is copied into every
//     peer's P at that peer's place for this part, followed by the peer's done flag; each
//     rank's comm stream waits for all its done flags before the call ends. With
//     CopyEngineOptions::phase2 = Epilogue (2 ranks) the epilogue stores the reduced tiles
//     into the peer's P itself and the comm stream writes only the done flags; with
//     TailKernel the last own group is exchanged by a kernel on the compute stream behind
//     the GEMM (tail_exchange.hpp), which ends once the peers' last groups are in.
//   alltoall: the comm stream waits for all incoming arrived flags before the call ends.
//   route ring (reductions): a group at position q < n−1 goes instead to rank r − 1's
//     receive buffer at the group's place at position q + 1, with rank r − 1's flag
//     arrived[(q + 1)·G + j]; every tile at position q ≥ 1 adds the incoming running sum
//     in the epilogue before it is signalled (CopyEngineOptions::route).
// The flag is written by the sender's stream into the receiver's memory (not an event the
// receiver's stream waits for): cudaStreamWaitEvent only sees records made before it is
// called, which from two rank threads would need a host handshake per call. The stream
// write's default memory barrier orders the copy's data before the flag.
// Flags hold the call's sequence number (epoch, from 1) and are never reset, so calls run
// back to back with no host synchronisation. Receive buffers alternate by call parity: a
// peer can run at most one call ahead of us (its call e+1 needs our groups of call e+1,
// which our GEMM computes after our call e), so it never overwrites what our call e reads.
// The peers' buffers are reached through PeerMemory (peer_memory.hpp): threads of one
// process exchange UVA pointers (peer access enabled), processes of one host (the
// harness's MPI mode) CUDA IPC handles; ranks on different hosts are refused. Ranks may
// also share one GPU (PeerLinks::shared_gpu, e.g. SharedGpuPeers): the same protocol, copies
// and flags inside one device memory, each rank's GEMM on CopyEngineOptions::num_ctas CTAs so
// that all ranks' persistent GEMMs are resident at once (a rank waiting for a peer's group
// must not hold the SMs the peer needs to compute it). That exists to check the multi-rank
// protocol where only one GPU is at hand; its timings mean nothing for the real transport.
// Setup (initialize, each prepare, freeing buffers) may wait for the whole device, so ranks
// sharing a GPU finish it before any rank runs: a rank that waits for the device while a
// peer's GEMM waits for that rank stalls until the wait timeout. The caller keeps P (from
// cudaMalloc across processes), and for allreduce a new P costs one collective pointer
// exchange (host-synchronising) on its first use.
//
// Host API: initialize → prepare(a, b, p) (optional; collective) → run (any number of times)
// → result_view / unpermute. Every call returns a Status; nothing throws. C++17.
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/common/status.hpp"
#include "kernels/gemm/gemm_config.hpp"
#include "kernels/gemm/own_gemm.hpp"
#include "kernels/harness/comm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/dtype.hpp"
#include "kernels/tilewise/copy_engine_layout.hpp"
#include "kernels/tilewise/peer_flag_writer.hpp"
#include "kernels/tilewise/peer_memory.hpp"
#include "kernels/tilewise/tilewise_problem.hpp"
#include "kernels/tilewise/unpermute.hpp"

namespace overlapsim::kernels::tilewise {

struct CopyEngineOptions {
  int groups_per_part = 2;
  int group_m = gemm::GemmConfig::kDefaultGroupM;
  double wait_timeout_s = 60.0;  // the epilogue's flag wait gives up (and flags it) after this
  // The per-tile signal's scope (gemm::EpilogueArgs::system_scope_signal): system by
  // default (measured no slower than the GPU scope).
  bool system_scope_signal = true;
  // How an all-reduce's reduced own groups reach the peers (copy_engine_layout.hpp).
  //   Epilogue (2 ranks, n a multiple of 256): each reduced own tile is stored into the
  //   peer's P over NVLink by the GEMM's epilogue itself, next to its local store, and the
  //   comm stream only writes the peer's done flag once the group's counter is complete.
  //   The copy-engine phase 2 copies the last own group after the GEMM has finished (a tail
  //   of about one wave's output at the copy rate); this one streams it out while the tiles
  //   are computed, at the cost of the epilogue's extra stores. Measured on 2 x H100 those
  //   stores over NVLink slow the GEMM by 7-16 points and the mode lost to the copy-engine
  //   phase 2 on every shape (docs/kernels/log.md, "the first 2 × H100 run").
  //   TailKernel: the copy engine for all own groups but the last, which a kernel behind the
  //   GEMM copies with every SM (tail_exchange.hpp): no stream operations in the tail.
  // The tuner times the modes it may use.
  CopyEnginePhase2 phase2 = CopyEnginePhase2::CopyEngine;
  // How partial tiles reach their owner (copy_engine_layout.hpp): Direct pushes every part
  // to its owner, whose epilogue sums all peers' terms; Ring passes each part's running sum
  // from rank to rank (r + 1 → r → r − 1 ...), each hop adding its own partial in its
  // epilogue, so each reduced tile reads one peer tile. Ring: reducescatter and allreduce,
  // not with phase 2 by the epilogue.
  CopyEngineRoute route = CopyEngineRoute::Direct;
  // All-reduce only: the rows cut into row_chunks consecutive chunks of m / row_chunks,
  // each a call of its own (its own rotated GEMM, buffers and flags) issued back to back:
  // chunk i + 1's GEMM runs while chunk i's reduced own part still travels to the peers
  // (phase 2), so only the last chunk's phase 2 is left after the last GEMM, at the cost
  // of c GEMM launches and their partial last waves. Phase 2 of every chunk but the last
  // by the copy engines (a tail kernel would hold the compute stream), the last chunk's
  // by `phase2`; the comm stream waits for every chunk's done flags only at the end.
  // Needs m a multiple of 128 x world x row_chunks.
  int row_chunks = 1;
  // All-reduce on the ring route only: the slab order (copy_engine_layout.hpp). One
  // persistent GEMM visits `slabs` slabs of m / slabs rows one after the other on every
  // rank; each slab is cut into world sub-slabs with world owners and reduced by the ring
  // inside the slab, so slab i's phase 2 (the reduced sub-slabs to the peers) runs under
  // slab i + 1's GEMM and only the last slab's is left after the GEMM, without row chunks'
  // extra GEMM launches and partial last waves. Phase 2 of every slab but the last by the
  // copy engines; the last slab's by `phase2` (tail_whole_part: its whole own sub-slab).
  // Needs m a multiple of 128 x world x slabs; not with row_chunks > 1.
  int slabs = 1;
  // With slabs > 1: the skewed slab order (copy_engine_layout.hpp): units visited by steps
  // slab + position, so each ring hop's partial comes from a step (about min(slabs, world)
  // sub-slabs) earlier instead of the sub-slab just before, which the plain slab order's
  // epilogue waits for when a sub-slab is shorter than a wave plus a copy.
  bool slab_skew = false;
  // All-reduce phase 2 by the copy engines: each reduced own group's copies to the n - 1
  // peers on n - 1 streams of their own at once (one a peer, forked from the comm stream
  // once the group's counter is complete), instead of one after the other on the comm
  // stream. One copy-engine copy moves about 370 GB/s, below a rank's NVLink egress, and on
  // one stream each copy's flag and the next copy's start wait for the copy before; on
  // their own streams the copies share the links, and the comm stream goes on to the next
  // group (or row chunk) at once. The comm stream joins them before its peer waits.
  // More than 2 ranks (with 2 the one copy takes the comm stream's place). initialize
  // refuses it for ranks sharing one GPU: 3 and 4 such ranks hung on H100 (not for lack of
  // hardware queues: CUDA_DEVICE_MAX_CONNECTIONS = 32 hung too; cause not found).
  bool parallel_phase2 = false;
  // All-reduce phase 2 by the copy engines on one stream of its own (forked from the comm
  // stream once an own group's counter is complete), the copies to the peers one after the
  // other there: the comm stream goes on to the next ring hop at once. With slabs, slab s's
  // phase 2 on the comm stream held back slab s + 1's hops (and the GEMM's epilogue waiting
  // for them) by the time of its n - 1 copies; one stream a peer frees the hops too but runs
  // n - 1 phase-2 copies beside each hop. More than 2 ranks; not with parallel_phase2;
  // refused for ranks sharing one GPU, like parallel_phase2.
  bool phase2_side_stream = false;
  // Phase 2 tail_kernel only: the tail kernel carries the whole own part (every own group,
  // one region) instead of its last group, and the copy engines none of it. With the ring
  // route the own groups are reduced only at the GEMM's end (each waits for the running sum
  // of the ring's last hop), so the copy engines' phase 2 of the first own groups runs
  // after the GEMM anyway, beside the tail kernel and sharing the links with it.
  bool tail_whole_part = false;
  // Persistent CTAs of the GEMM; 0: one per SM. Ranks sharing a GPU need
  // world * num_ctas <= its SMs (PeerLinks::shared_gpu).
  int num_ctas = 0;
  // The GEMM's split last wave (gemm::SchedulerOptions::split_k_tail; 1 = off): the last
  // wave's tiles (the own part's last, where they are all reduced and must then cross the
  // link) computed in split ranges of K by several CTAs each, so they complete in split steps
  // instead of all at the GEMM's end. The tiles' sums change order (within fp32 rounding of
  // the unsplit GEMM); the protocol (one signal and one reduction a tile) is unchanged.
  int split_k_tail = 1;
};

class CopyEngineDesign {
 public:
  CopyEngineDesign() = default;
  ~CopyEngineDesign();
  CopyEngineDesign(const CopyEngineDesign&) = delete;
  CopyEngineDesign& operator=(const CopyEngineDesign&) = delete;

  static Status can_implement(CollectiveOp op, std::int64_t m, std::int64_t n, std::int64_t k,
                              int world, const CopyEngineOptions& options);
  // Collective (every rank, same order): plans, buffers, peer access, pointer exchange.
  Status initialize(CommHandle* comm, CollectiveOp op, std::int64_t m, std::int64_t n,
                    std::int64_t k, DType dtype, const CopyEngineOptions& options);
  Status initialize(PeerLinks links, CollectiveOp op, std::int64_t m, std::int64_t n,
                    std::int64_t k, DType dtype, const CopyEngineOptions& options);
  Status prepare(const void* a, const void* b, void* p);
  // One overlapped call; starts and ends on compute_stream. p: M×N elements.
  Status run(const void* a, const void* b, void* p, cudaStream_t compute_stream,
             cudaStream_t comm_stream);
  // The GEMM alone with the rotated order, remapped stores and signals, own part placed
  // without waiting or reducing (no communication); counters reset afterwards.
  Status run_gemm_only(const void* a, const void* b, void* p, cudaStream_t stream);
  // The last call's result in its tile layout (copy_engine_layout.hpp), and back to natural.
  TileView result_view(const void* p) const;
  Status unpermute(const void* p, void* natural, cudaStream_t stream) const;
  Status check_waits();

  // Diagnostics: with the timeline on, run() records an event after each of its steps (on
  // the comm stream: each group's counter seen, its copy done, the peers' flags seen; on
  // the compute stream: the call's start, the GEMM's end, the call's end). timeline() gives
  // the last call's steps in µs from its start (waits for them). The extra event records
  // cost the comm stream a little; timed runs leave it off.
  // With row chunks each chunk records its own steps; timeline() gives them all, each label
  // prefixed with "c<i>_" and timed from that chunk's start.
  void set_timeline(bool on) {
    timeline_on_ = on;
    for (auto& chunk : chunks_) chunk->set_timeline(on);
  }
  Status timeline(std::vector<std::pair<std::string, double>>* steps_us) const;

  // The layout (of the first row chunk where row_chunks > 1; out_rows and the result's tile
  // table cover all rows).
  const CopyEngineLayout& plan() const { return plan_; }

 private:
  // run() in steps, for a caller that issues several calls back to back (row_chunks):
  // the fork, GEMM and transport; then the waits for the peers' copies into this rank
  // (all-reduce done flags, all-to-all arrivals) on the comm stream.
  Status enqueue(const void* a, const void* b, void* p, cudaStream_t compute_stream,
                 cudaStream_t comm_stream);
  Status enqueue_peer_waits(cudaStream_t comm_stream);
  Status initialize_row_chunks(PeerLinks links, CollectiveOp op, std::int64_t m, std::int64_t n,
                               std::int64_t k, DType dtype, const CopyEngineOptions& options);
  // Row chunk i of a, p (row-major, m / row_chunks rows each).
  const void* chunk_a(const void* a, int i) const;
  void* chunk_p(void* p, int i) const;

  struct Peer {
    char* recv = nullptr;  // its receive buffers (2 parities)
    std::uint32_t* arrived = nullptr;
    std::uint32_t* done = nullptr;
    std::uint32_t* tail_flags = nullptr;
    int device = -1;
  };
  Status make_gemm(const void* a, const void* b, void* p, int parity, bool reduce,
                   std::unique_ptr<gemm::OwnGemm>* out);
  char* recv_half(int parity) const;
  // Writes `epoch` into a peer's flag after everything before it on `stream`.
  Status signal_peer(std::uint32_t* peer_flag, std::uint32_t epoch, cudaStream_t stream);
  Status mark(const std::string& label, cudaStream_t stream);  // a timeline step
  // All-reduce phase 2: where peer d keeps `group` of this rank's part (of the group's slab),
  // in its P for our p.
  char* phase2_destination(void* p, int d, const CopyEngineGroup& group) const;
  // TailKernel: the own groups from `from` to the last, to every peer, and theirs to us,
  // behind the GEMM.
  Status exchange_tail(int from, const char* local, void* p, std::uint32_t epoch,
                       cudaStream_t compute_stream);

  // The peers' buffers as seen from here; world and rank are the plan's.
  std::unique_ptr<PeerMemory> memory_;
  bool initialized_ = false;
  TilewiseProblem problem_;
  CopyEngineOptions options_;
  CopyEngineLayout plan_;
  DeviceBuffer tile_offsets_, tile_groups_, tile_arrival_, out_offsets_;
  DeviceBuffer counters_, arrived_, done_, recv_, timed_out_;
  DeviceBuffer tail_flags_;     // TailKernel: [source rank][kTailSlices] epochs
  PeerFlagWriter flag_writer_;  // signal_peer's writes
  std::vector<Peer> peers_;     // [world], own entry unused
  std::map<void*, std::vector<char*>> peer_p_;  // allreduce: every rank's P for our P
  std::map<std::tuple<const void*, const void*, void*>,
           std::array<std::unique_ptr<gemm::OwnGemm>, 2>>
      gemms_;
  std::map<std::tuple<const void*, const void*, void*>, std::unique_ptr<gemm::OwnGemm>> gemm_only_;
  std::uint32_t epoch_ = 0;
  cudaEvent_t fork_ = nullptr;
  cudaEvent_t join_ = nullptr;
  // parallel_phase2: one stream per peer in phase 2's rotated order (rank + 1, rank + 2,
  // ...), the event they fork from (each own group's counter seen) and one join event each.
  std::vector<cudaStream_t> phase2_streams_;
  cudaEvent_t phase2_fork_ = nullptr;
  std::vector<cudaEvent_t> phase2_joins_;
  bool phase2_forked_ = false;  // this call used the extra streams (enqueue_peer_waits joins)
  std::vector<std::unique_ptr<CopyEngineDesign>> chunks_;  // row_chunks > 1: one per row chunk
  bool timeline_on_ = false;
  std::vector<cudaEvent_t> timeline_events_;
  std::vector<std::string> timeline_labels_;
  std::size_t timeline_used_ = 0;
};

}  // namespace overlapsim::kernels::tilewise
