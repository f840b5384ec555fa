#pragma once
// Design `tilewise` for AllGather+GEMM (sequence parallelism's forward, FSDP): each rank
// holds the rows [r·M/n, (r+1)·M/n) of A (its shard, M/n × K) and computes
// C = all_gather(A) · Bᵀ (M × N) with the own GEMM, which consumes the peers' row blocks
// as they arrive instead of after the whole all-gather (the consumer side of the tile-wise
// design; the producer side is copy_engine_design.hpp).
//   Transport (no SM): at the call's start each rank's copy engines push its shard into
//     every peer's gathered-A buffer at slot r, cut into `chunks` chunks of rows, each
//     chunk followed on the same stream by a stream write of the call's epoch into the
//     receiver's flag ready[r][chunk] (the write's default memory barrier orders the copy
//     first). Push order: at step i = 1..n−1 rank r sends to r − i, so at every step the n
//     senders aim at n different receivers and receiver d gets d + 1's block first, then
//     d + 2's, ... (AllGatherPush::Rotated, one stream); or every peer's pushes on a stream
//     of their own at once (AllGatherPush::PerPeer).
//   GEMM: the rank-rotated order visits the row blocks r, r+1, ..., r−1, the order they
//     arrive in; the own block is read in place from the shard (no copy, no wait), and the
//     producer warp waits for a chunk's flag before the first TMA load of its rows
//     (own_gemm.hpp GatherArgs). Stores are natural: C needs no un-permute.
// The result is bit for bit the own GEMM on NCCL's all-gather of the same shards: the same
// tiles from the same rows, only computed in another order (no reduction involved).
// Back to back: flags hold the call's epoch (from 1, never reset; compared with
// wrap-around), gathered buffers alternate by the epoch's parity. A peer is at most one
// call ahead: its call e+1 pushes only after its call e ended, which needed our pushes of
// call e, made after our call e−1 (whose GEMM read the other parity) ended. By default
// (AllGatherGemmOptions::align_start) each call starts with a barrier of stream memory
// operations, so all ranks' pushes and GEMMs of a call start together.
// No deadlock: the pushes need no SM and start at the call's fork, which the start barrier
// lets through once every rank has reached the call (each rank writes its arrival before it
// waits); the own block needs no flag, so every GEMM makes progress whatever its peers do;
// ranks sharing one GPU are fine for the same reason (a waiting GEMM or barrier waits only
// for a copy engine or a peer stream's write).
// With AllGatherGemmOptions::vendor_gemm the same transport drives cuBLASLt instead of the own
// GEMM: the own block first, then one vendor GEMM a peer chunk in arrival order, each behind a
// stream wait for that chunk's flag (a stream memory operation: no SM, no host). The pushes
// run on the senders' streams, so no CUDA event of theirs exists on the receiver; the flag is
// what it can wait on. Its result is bit for bit NCCL all-gather + the same cuBLASLt GEMM per
// chunk (run_vendor_on_gathered), and within bf16 rounding of one cuBLASLt GEMM over all rows
// (each chunk's algorithm is the heuristic's for its own shape). With vendor_streams = 2 the
// GEMMs alternate between the compute stream and a second one (joined before the call ends).
// Peers through PeerMemory (peer_memory.hpp): UVA pointers between threads, IPC handles
// between processes of one host.
// Host API: can_implement → initialize (collective) → prepare(a, b, c) (optional) → run
// (any number of times) → check_waits. Every call returns a Status; nothing throws. C++17.
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/common/status.hpp"
#include "kernels/gemm/gemm_config.hpp"
#include "kernels/gemm/own_gemm.hpp"
#include "kernels/harness/comm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/dtype.hpp"
#include "kernels/tilewise/peer_flag_writer.hpp"
#include "kernels/tilewise/peer_memory.hpp"
#include "kernels/tilewise/vendor_row_gemms.hpp"

namespace overlapsim::kernels::tilewise {

// How the shard's copies to the n − 1 peers are issued (see the header comment).
enum class AllGatherPush { Rotated, PerPeer };
const char* to_string(AllGatherPush push);  // "rotated", "per_peer"
std::optional<AllGatherPush> parse_allgather_push(const std::string& name);

struct AllGatherGemmOptions {
  // Chunks a row block is cut into, each with its own flag: the GEMM may start on a block's
  // first rows while its last ones still travel, at the cost of a copy and a stream write
  // per chunk. Needs M a multiple of 128 × world × chunks.
  int chunks = 1;
  AllGatherPush push = AllGatherPush::Rotated;
  // Grouped raster (tile_scheduler.hpp); reduced to a divisor of the tile rows per block so
  // a raster group never spans two blocks.
  int group_m = gemm::GemmConfig::kDefaultGroupM;
  double wait_timeout_s = 60.0;  // the producer's flag wait gives up (and flags it) after this
  int num_ctas = 0;              // persistent CTAs of the GEMM; 0: one per SM
  // Every rank's call starts (pushes and GEMM) only once every peer has reached the same
  // call: a barrier of stream memory operations at the fork (each rank writes the epoch
  // into every peer's arrival flag, then its compute stream waits for all of theirs). No SM.
  // Without it, back-to-back calls drift apart: a rank that starts first stalls mid-GEMM on
  // a late peer's chunks, and the stall costs it about twice the lateness (measured on 4 ×
  // H200 at 2048×9216×12288 and 2048×12288×12288 with 4 chunks), so it ends last and the
  // next call starts skewed the other way; the ranks settle into that cycle (calls up to
  // 1.6 × the aligned ones). Waiting before the GEMM instead keeps its CTAs in step and
  // costs the skew plus the barrier's latency (about 20 µs there).
  bool align_start = true;
  // The GEMM's split last wave (gemm::SchedulerOptions::split_k_tail; 1 = off): a partial last
  // wave's tiles in split ranges of K on several CTAs each. Its K sums run in another order
  // (within fp32 rounding of the unsplit GEMM), so the result equals NCCL all-gather + the own
  // GEMM with the same split bit for bit, not the unsplit one.
  int split_k_tail = 1;
  // cuBLASLt GEMMs a row block (own) and a chunk (peers) instead of the own GEMM: where the
  // whole GEMM is long and in full waves, the vendor's per-shape kernel is faster than the own
  // GEMM's one tile, and a stall between two GEMMs costs only its length. split_k_tail must be
  // 1; the GEMM needs no k % 8 (no TMA reads in place).
  bool vendor_gemm = false;
  // vendor_gemm only: the streams its GEMMs alternate over, 1 or 2. With 2, the own block and
  // the peer chunks in arrival order go to the compute stream and a stream of the design's own
  // in turn (each behind its chunk's flag on that stream, as PyTorch's
  // fused_all_gather_matmul alternates its two streams), so a GEMM's partial last wave
  // overlaps the next one's first: with one stream, four GEMMs of M/4 rows each end on a
  // partial wave (405B QKV's 2048 x 4608 chunk: 288 tiles, 2.2 waves of 132 SMs). Each chunk
  // still has its own plan, handle and workspace per stream, so the result is the same bits.
  int vendor_streams = 1;
};

// Events a call records when traced (AllGatherGemmDesign::trace_next): where its pushes
// started on the comm stream, where each push step's last flag was written (step i = 1..n−1
// to rank − i; step_end[i − 1]), and where the GEMM ended on the compute stream (before the
// join). The caller creates them (timing enabled) and reads them against its own events.
struct AllGatherCallTrace {
  cudaEvent_t pushes_start = nullptr;
  std::vector<cudaEvent_t> step_end;
  cudaEvent_t gemm_end = nullptr;
};

// Predicted time of one call of `options` from the GEMM alone on the gathered A (gemm_s, on
// `ctas` CTAs) and the transport alone (gather_s: run_gather_only's time), both measured: the
// planner's timeline (sim/tilewise_plan/allgather.hpp), one push step being gather_s over the
// steps the transport takes ((world - 1) x chunks in rotated order, chunks with a stream a
// peer).
double predict_allgather_time_s(std::int64_t m, std::int64_t n, int world,
                                const AllGatherGemmOptions& options, int ctas, double gemm_s,
                                double gather_s);

class AllGatherGemmDesign {
 public:
  AllGatherGemmDesign() = default;
  ~AllGatherGemmDesign();
  AllGatherGemmDesign(const AllGatherGemmDesign&) = delete;
  AllGatherGemmDesign& operator=(const AllGatherGemmDesign&) = delete;

  // Shape and option checks only (no CUDA call): m is the gathered row count.
  static Status can_implement(std::int64_t m, std::int64_t n, std::int64_t k, int world,
                              const AllGatherGemmOptions& options);
  // Collective (every rank, same order): buffers, flags, streams, pointer exchange.
  Status initialize(CommHandle* comm, std::int64_t m, std::int64_t n, std::int64_t k, DType dtype,
                    const AllGatherGemmOptions& options);
  Status initialize(PeerLinks links, std::int64_t m, std::int64_t n, std::int64_t k, DType dtype,
                    const AllGatherGemmOptions& options);
  // a: this rank's shard (M/n × K), b: N × K, c: M × N. Builds the GEMMs for these buffers
  // (no communication; run() calls it for buffers it has not seen).
  Status prepare(const void* a, const void* b, void* c);
  // One overlapped call; starts and ends on compute_stream (the pushes on comm_stream and,
  // with PerPeer, streams of the design's own, joined before the call ends).
  Status run(const void* a, const void* b, void* c, cudaStream_t compute_stream,
             cudaStream_t comm_stream);
  // The transport alone: the same pushes and flags, then compute_stream waits for every
  // peer's chunks to have arrived (stream waits, no SM, no GEMM): the copy engines'
  // all-gather time, what the predictor's copy rate is read from. It counts as a call
  // (epoch and parity), so it may be interleaved with run().
  Status run_gather_only(const void* a, cudaStream_t compute_stream, cudaStream_t comm_stream);
  // vendor_gemm: the design's cuBLASLt GEMMs over an already gathered A (M × K, every block
  // in place), no waits: NCCL all-gather followed by this is the design's result bit for bit.
  Status run_vendor_on_gathered(const void* gathered_a, const void* b, void* c,
                                cudaStream_t stream) const;
  // Whether a producer's wait for a chunk timed out (host-synchronising).
  Status check_waits();
  // The next run() records `trace`'s events (rotated pushes only; a diagnostic).
  void trace_next(const AllGatherCallTrace* trace) { trace_ = trace; }

  int world() const { return world_; }
  int rank() const { return rank_; }
  const AllGatherGemmOptions& options() const { return options_; }
  int num_ctas() const;
  // The GEMM's schedule (rotated block order, group_m, CTAs, split last wave): the own GEMM
  // with these options gives the design's result bit for bit from NCCL's gathered A.
  gemm::SchedulerOptions scheduler() const;

 private:
  char* gathered(int parity) const;
  // The call's fork, pushes and flags; the streams used, for the join.
  Status enqueue_pushes(const void* a, std::uint32_t epoch, cudaStream_t compute_stream,
                        cudaStream_t comm_stream, std::vector<cudaStream_t>* used);
  Status join(const std::vector<cudaStream_t>& used, cudaStream_t compute_stream);
  // vendor_gemm's GEMMs: the own block from the shard, then every peer chunk of this parity,
  // each behind its flag's wait when `wait` (else read as it is). GEMM j (0: the own block)
  // runs on `streams[j % streams.size()]` with plan set j % vendor_streams.
  Status enqueue_vendor_gemms(const void* a, const void* b, void* c, const char* gathered_a,
                              std::uint32_t epoch, bool wait,
                              const std::vector<cudaStream_t>& streams) const;
  Status signal_peer(std::uint32_t* peer_flag, std::uint32_t epoch, cudaStream_t stream);
  // align_start's barrier on compute_stream.
  Status enqueue_start_barrier(std::uint32_t epoch, cudaStream_t compute_stream);

  std::unique_ptr<PeerMemory> memory_;
  bool initialized_ = false;
  int world_ = 1, rank_ = 0;
  std::int64_t m_ = 0, n_ = 0, k_ = 0;
  DType dtype_ = DType::BF16;
  AllGatherGemmOptions options_;
  int group_m_ = 1;
  DeviceBuffer gathered_;       // 2 parities × M × K
  DeviceBuffer flags_;          // [world][chunks] epochs written by the senders
  DeviceBuffer timed_out_;      // int, set by a producer's timed-out wait
  DeviceBuffer arrived_;        // [world] epochs the peers reached (align_start)
  PeerFlagWriter flag_writer_;  // signal_peer's writes
  std::vector<char*> peer_gathered_;           // [world] their gathered buffers
  std::vector<std::uint32_t*> peer_flags_;     // [world] their flags
  std::vector<std::uint32_t*> peer_arrived_;   // [world] their arrival flags
  const AllGatherCallTrace* trace_ = nullptr;
  VendorRowGemms vendor_;  // vendor_gemm: a plan for a block's rows and one for a chunk's
  // vendor_streams = 2: the same plans on their own handle and workspace, for the second
  // stream's GEMMs (a workspace serves one stream at a time), the stream and its join.
  VendorRowGemms vendor_alt_;
  cudaStream_t vendor_stream_ = nullptr;
  cudaEvent_t vendor_join_ = nullptr;
  std::map<std::tuple<const void*, const void*, void*>,
           std::array<std::unique_ptr<gemm::OwnGemm>, 2>>
      gemms_;
  std::uint32_t epoch_ = 0;
  cudaEvent_t fork_ = nullptr;
  // PerPeer: streams for the peers at steps 2..n−1 (step 1 uses the comm stream) and one
  // join event per stream used, the comm stream's included.
  std::vector<cudaStream_t> push_streams_;
  std::vector<cudaEvent_t> joins_;
};

}  // namespace overlapsim::kernels::tilewise
