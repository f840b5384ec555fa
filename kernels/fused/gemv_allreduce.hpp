#pragma once
// Fused GEMV + all-reduce for decode's row-parallel projections (o_proj, down_proj under
// tensor parallelism): y[tokens x n] = sum over ranks of x_r[tokens x k] * W_r^T, W_r the
// rank's n x k shard of a Linear weight (K split over ranks), in one kernel per call
// (gemv_allreduce.cu): CTAs take work units (a slice of 32 columns of y and a range of K)
// as they free up, each finished slice's bf16 partial is stored straight into every peer's
// receive buffer over NVLink with the call's epoch inside every 8 bytes (no fence, no flag),
// and once no unit is left each CTA reduces its share of slices in rank order.
//   Peers, by GemvTransport: PeerPointers, PeerMemory (kernels/tilewise/peer_memory.hpp):
//     threads of one process exchange UVA pointers with peer access on, processes of one
//     host CUDA IPC handles; NcclWindow, NCCL's device API (2.28+): the buffers come from
//     ncclMemAlloc, are registered as one symmetric window (ncclCommWindowRegister), and the
//     kernel takes each peer's address from the window (ncclGetPeerPointer, LSA: NVLink
//     load/store). The kernel is otherwise the same.
//   Back to back: receive lines carry the call's number (epoch) and are never reset;
//     receive buffers alternate by call parity (a peer can be at most one call ahead: its
//     call e+1 waits for this rank's pushes of call e+1, made after this rank's call e ended).
//   Results: a rank's partial is the same bits in run and run_local (K splits summed in
//     split order in fp32, one rounding), so with 2 ranks the result is bit-identical to
//     run_local followed by NCCL's all-reduce (one fp32 add, one rounding, commutative);
//     with more ranks the fixed rank order 0, 1, ... (fp32 sum of the bf16 partials, one
//     rounding) on every rank.
//   Residency: no CTA waits before every unit has been handed out, so the call completes
//     when each rank's whole grid is resident; the grid is capped by occupancy, and nothing
//     else may hold the SMs meanwhile. Calls of one design run in one stream order (they
//     share a unit counter).
// Host API: can_implement -> initialize (collective) -> run / run_local (any number of
// times, no host synchronisation) -> check_timeout. Every call returns a Status. C++20.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/common/status.hpp"
#include "kernels/harness/comm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels::tilewise {
class PeerMemory;
}

namespace overlapsim::kernels::fused {

struct GemvKernelArgs;  // gemv_allreduce_kernel.hpp

enum class GemvTransport { PeerPointers, NcclWindow };

// The finer last wave: the last `slices` slices of y are each cut into `splits` (2 .. 16)
// K ranges and handed out after every other unit, so the CTAs that free up near the GEMV's
// end share small units while the bulk keeps the large ones (GemvKernelArgs). splits 0 or
// 1: off. slices 0 with splits >= 2: half the CTAs that fit, at most every slice. Up to 16
// tokens (more: ignored, off) and not with early_claim. Each unit's K range is whole
// loop iterations (32 chunks of 32), so splits is at most ceil(k / 1024).
struct GemvLastWave {
  int slices = 0;
  int splits = 0;
  bool on() const { return splits >= 2; }
};
const char* to_string(GemvTransport transport);  // "peer_pointers", "nccl_window"

struct GemvAllReduceOptions {
  GemvTransport transport = GemvTransport::PeerPointers;
  double timeout_s = 30.0;  // a wait for a peer longer than this gives up (check_timeout)
  int max_ctas = 0;         // 0: as many as fit on the device at once
  // Ranges each slice's K is split into (1 .. 16): more units than CTAs, so CTAs that
  // stream W faster take more of them. 0: auto_k_splits.
  int k_splits = 0;
  // W's loads ask L2 for whole 256-byte blocks (GemvKernelArgs::l2_prefetch); same bits.
  bool l2_prefetch = false;
  // Up to 8 tokens, with more units than CTAs: a CTA claims its next unit before its
  // current one's last loop iteration and has L2 prefetch that unit's first W
  // (GemvKernelArgs::early_claim), so the GPU does not drain between units. Same bits.
  bool early_claim = false;
  // tune() also tries the splits 3, 6, 12 and 16 besides 1, 2, 4 and 8: finer units at the
  // GEMV's end, for when the early claim makes the extra units cheap.
  bool fine_k_splits = false;
  // A fixed finer last wave, kept by configure's default and by every tune() candidate.
  GemvLastWave last_wave = {};
  // tune() also tries finer last waves on top of 1 and 2 K splits with the L2 hint: the last
  // 1/8, 1/4, 1/2 and 1 grid's worth of slices (at most all) cut into 2, 4 or 8 ranges.
  bool tune_last_wave = false;
};

// The default split: 1 when the slices fit the grid (one unit per CTA); else doubled, up
// to 8, while the units number under 4 per CTA and each split keeps at least 3072 of K.
int auto_k_splits(std::int64_t n, std::int64_t k, int ctas);

class GemvAllReduce {
 public:
  GemvAllReduce();
  // With NcclWindow, collective: deregisters the window (every rank destroys its design in
  // the same order).
  ~GemvAllReduce();
  GemvAllReduce(const GemvAllReduce&) = delete;
  GemvAllReduce& operator=(const GemvAllReduce&) = delete;

  // bf16, 1..64 tokens, n a multiple of 32, k a multiple of 32, 1..8 ranks.
  static Status can_implement(int tokens, std::int64_t n, std::int64_t k, DType dtype, int world);

  // Collective over comm's ranks: allocates the receive buffers, exchanges their
  // addresses and loads the kernels. Call it between quiesce() fences (it allocates).
  Status initialize(CommHandle* comm, int tokens, std::int64_t n, std::int64_t k, DType dtype,
                    const GemvAllReduceOptions& options = {});

  // Every rank calls it once per step, in the same order: y = sum over ranks of x * w^T.
  // x: tokens x k, w: n x k, y: tokens x n, all row-major bf16, 16-byte aligned.
  Status run(const void* x, const void* w, void* y, cudaStream_t stream);
  // This rank's partial alone, the same kernel with no communication: y = x * w^T.
  Status run_local(const void* x, const void* w, void* y, cudaStream_t stream);

  // Chooses the K split and the L2 prefetch hint by measurement on this device: times
  // run_local with each split (1, 2, 4, 8, and with fine_k_splits 3, 6, 12, 16, where each
  // split keeps at least 2048 of K), with
  // and without the hint, on the caller's buffers (x[i % sets], w[i % sets]: rotate over
  // enough sets to exceed L2, as a layer's weights do), the slowest rank's time deciding,
  // and keeps the fastest (auto_k_splits' rule was fitted on H100 and is up to 8 % off on
  // H200). Collective (an all-reduce of the timings) when world > 1; call it after
  // initialize, between calls, on their stream; it synchronises. `report` (optional)
  // receives the choice and every candidate's time.
  Status tune(int sets, const void* const* x, const void* const* w, void* y, cudaStream_t stream,
              std::string* report = nullptr);
  // Sets the K split (0: auto_k_splits), the hint and the last wave, between calls.
  Status configure(int k_splits, bool l2_prefetch, cudaStream_t stream);
  Status configure(int k_splits, bool l2_prefetch, GemvLastWave last_wave, cudaStream_t stream);

  // Waits for `stream`; a failure if any wait for a peer's partial of this rank gave up.
  Status check_timeout(cudaStream_t stream) const;

  // Diagnostics: run() and run_local() record per-CTA timestamps into `trace` (device memory,
  // 4 x grid() u64; GemvKernelArgs::trace says which); nullptr stops it.
  void set_trace(std::uint64_t* trace) { trace_ = trace; }

  int grid() const { return grid_; }
  int k_splits() const { return k_splits_; }
  bool l2_prefetch() const { return l2_prefetch_; }
  bool early_claim() const { return early_claim_; }
  // The last wave in force (slices resolved; off where it does not apply).
  GemvLastWave last_wave() const { return last_wave_; }
  GemvTransport transport() const { return transport_; }
  std::uint32_t epoch() const { return epoch_; }

 private:
  // The kernel's arguments for this rank's GEMV alone (no push); run() adds the exchange.
  // Counts the call's units into the ticket base.
  std::int64_t units() const;
  GemvKernelArgs local_args(const void* x, const void* w, void* y);

  int tokens_ = 0;
  std::int64_t n_ = 0, k_ = 0;
  int world_ = 1, rank_ = 0, grid_ = 0, k_splits_ = 1, max_ctas_ = 0;
  bool l2_prefetch_ = false, early_claim_ = false, fine_k_splits_ = false;
  bool tune_last_wave_ = false;
  GemvLastWave last_wave_option_ = {}, last_wave_ = {};
  int fit_ = 0;  // CTAs that fit (max_ctas applied)
  std::uint32_t epoch_ = 0;
  unsigned long long ticket_base_ = 0;
  std::uint64_t* trace_ = nullptr;
  double timeout_s_ = 30.0;
  GemvTransport transport_ = GemvTransport::PeerPointers;
  DeviceBuffer recv_, timed_out_;
  DeviceBuffer partials_, arrivals_, tickets_;  // K splits and the unit counter, this GPU
  std::unique_ptr<tilewise::PeerMemory> peers_;
  CommHandle* comm_ = nullptr;
  void* nccl_buffer_ = nullptr;  // NcclWindow: the receive buffer
  ncclWindow_t window_ = nullptr;
  void* recv_ptrs_[8] = {};
};

}  // namespace overlapsim::kernels::fused
