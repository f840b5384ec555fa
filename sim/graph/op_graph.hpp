#pragma once
// The operation graph of one training step, as workloads/ generators emit it and the
// simulator executes it. One graph per simulated rank: vertices are operations, edges
// are dependencies (an op starts when all its predecessors are done and its stream is
// free). Compute ops carry their shape, FLOPs and bytes; communication ops carry the
// collective, its bytes (nccl-tests convention, see collective.hpp) and a communicator.
#include <cstdint>
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "sim/collectives/collective.hpp"

namespace overlapsim::sim {

enum class OpKind {
  Gemm,             // dense matmul: m x n x k (x batch)
  Gemv,             // matrix-vector (decode, small batch)
  Attention,        // fused attention (flash-attention style): flops and bytes given
  Elementwise,      // memory-bound: norms, activations, residual adds, optimizer math
  EmbeddingLookup,  // embedding-bag gather: bytes given
  Collective,       // a collective over a communicator
  SendRecv,         // point-to-point (pipeline-parallel activations/gradients)
};
const char* to_string(OpKind kind);

enum class Precision { FP32, BF16, FP16, FP8 };
const char* to_string(Precision p);
int bytes_per_element(Precision p);

enum class Phase { Forward, Backward, Optimizer };

// An elementwise op whose writes are atomic adds into scattered rows, which run at the
// rate of the device's atomics rather than at its memory bandwidth: PyTorch's
// `scatter_add_` and `index_add_` (Megatron-Core's unfused token unpermutation, and the
// backward of its permutation's `index_select`). ComputeModel charges them at
// compute.scatter_add_bandwidth_Bps / index_add_bandwidth_Bps.
enum class AtomicAdd : std::uint8_t { None, Scatter, Index };
const char* to_string(Phase p);

// Streams of one rank. Compute ops run one at a time on Compute; communication runs on
// its own stream(s) so it can overlap with compute (e.g. DP gradient buckets).
// ContextComm (added by the workloads generators) carries context-parallel K/V traffic;
// ExpertNodeComm the NVLink leg of a hierarchical token exchange, which runs while its
// network leg (on ExpertComm) is in flight.
enum class StreamKind {
  Compute,
  TensorComm,
  DataComm,
  PipelineComm,
  ExpertComm,
  ContextComm,
  ExpertNodeComm
};
// How many StreamKinds there are: a rank has one stream of each (keep last in the enum above).
inline constexpr int kNumStreamKinds = static_cast<int>(StreamKind::ExpertNodeComm) + 1;
const char* to_string(StreamKind s);

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;
};

// A fused attention kernel's shape as its efficiency depends on it: the head dimension
// (the mean of the query/key and value dimensions where they differ, as in MLA) and the
// causal sequence length whose query tiles sweep as many keys on average (s for a causal
// sequence of s; 2w for a sliding window of w; s / cp for one block of a context-parallel
// ring). 0: not given (the FLOP curves time the op).
// query_tiles: the call's parallel work, batch x heads x ceil(queries / 128).
struct AttentionShape {
  double head_dim = 0;
  double seq_len = 0;
  double query_tiles = 0;
};

// A communicator: an ordered list of global GPU ranks. `family` groups communicators
// that are images of each other under the parallel layout (all TP groups, all DP groups
// of a stage, ...): the executor may simulate one member of a family's ranks and launch
// the others' traffic as symmetric load.
struct CommGroup {
  std::string family;  // "tp", "dp", "pp", "ep", "cp", ...
  std::vector<int> ranks;
};

struct OpNode {
  std::string name;  // e.g. "L12.fwd.qkv"; names show in traces
  OpKind kind = OpKind::Elementwise;
  Phase phase = Phase::Forward;
  StreamKind stream = StreamKind::Compute;
  Precision precision = Precision::BF16;
  // FP8 GEMMs with block scaling (1 x 128 activation runs, 128 x 128 weight blocks: the
  // DeepSeek-V3 recipe) rather than one scale per tensor; ComputeModel charges
  // compute.fp8_block_scaling_time_factor on top of the fp8 GEMM time.
  bool fp8_block_scaled = false;
  AtomicAdd atomic_add = AtomicAdd::None;  // Elementwise: its writes are atomic adds
  // Kernels the op stands for (a framework module's several launches): each pays the
  // profile's launch_overhead_s on the GPU, and the host issues each (host_s).
  int launches = 1;
  int layer = -1;
  int microbatch = -1;

  // Compute ops.
  GemmShape gemm;              // Gemm, Gemv (n == 1 for gemv)
  AttentionShape attention;    // Attention
  double flops = 0;            // floating-point operations of this op
  std::uint64_t bytes = 0;     // minimum device-memory traffic (reads + writes)

  // Communication ops.
  CollectiveOp collective = CollectiveOp::AllReduce;
  std::uint64_t comm_bytes = 0;  // nccl-tests convention
  int comm_group = -1;           // index into StepGraph::groups
  int peer_rank = -1;            // SendRecv: the global rank on the other side
  bool is_send = true;           // SendRecv: send (true) or receive (false)
  // Collective, SendRecv: its stream has high priority, so its kernel's CTAs go ahead of a
  // running kernel's remaining CTAs (they still find no SM under a GEMM kernel); false:
  // default priority, as PyTorch's ProcessGroupNCCL creates its streams.
  bool high_priority = false;
  // Collective: host-side wait between the moment every member is ready and the start of
  // the transfer, e.g. a runtime that coordinates collectives on a background thread in
  // cycles (Horovod). The collective's stream is busy meanwhile; 0 for NCCL called directly.
  double launch_delay_s = 0;

  // Overlap pairing: for a collective that consumes a compute op's output (or a compute
  // op that consumes a collective's output), the vertex index of that partner op in the
  // same rank graph; -1 when unpaired. Overlap designs (sequential, decomposed, tilewise,
  // fused, shaped) act on these pairs.
  int pair_partner = -1;

  // A copy that only puts a pair's rows in the order the framework's kernels need (the
  // all-to-all dispatcher's regrouping by local expert between the exchange and the expert
  // GEMM): an overlap design that overlaps the pair writes the rows where they belong, so
  // there the op takes no time (PairedDesign); under `sequential` it runs as it is.
  bool pair_layout = false;

  // Activation recomputation (a forward op re-run during backward). Its flops count in
  // StepGraph::flops_per_step but not in model_flops_per_step.
  bool recompute = false;

  // The host that issues a rank's ops in program order (an eager framework's Python and
  // kernel launches): the compute ops and the inline collectives (StepLayout's
  // host_issues(): tensor, context and expert parallelism). host_s: the host's time to issue
  // this op (its launches); the op cannot start before the host has issued it. host_sync:
  // the host waits for this op to finish (a device-to-host copy it needs, such as a token
  // dispatcher's counts), then host_sync_s more, before it issues the next op. All zero:
  // the host is never on the critical path (as before the host was modelled).
  double host_s = 0;
  bool host_sync = false;
  double host_sync_s = 0;
};

// How workloads/ generators build a rank graph (what the executor may rely on):
//  - vertices are added in program order (a topological order; DP gradient buckets come
//    last in it but depend only on the backward ops that produce their gradients);
//    consecutive ops on the same stream of a rank are linked by an edge (a stream runs in
//    order), other edges are data dependencies;
//  - pair_partner is set on both ops of a pair;
//  - a SendRecv send from rank A to rank B matches the receive at B from A of the same
//    ordinal (k-th send A->B with k-th receive at B from A), as in NCCL; the generators
//    order pipeline sends/receives so this holds under rendezvous semantics (interleaved
//    schedules leave their SendRecv ops unchained, like an NCCL group);
//  - StepGraph::groups holds every communicator of each family used (all TP groups, all
//    DP groups, ...), so a folded collective's images on other groups can be found;
//  - ops with flops == 0 are charged by bytes only (norms, activations, optimizer math).
// Edges in a vector, not Boost's default list (EdgeListS): a list node per edge was the
// generator's largest allocation, and its frees a large part of each step's teardown.
// Edges are never removed, so the vector's O(E) removal never runs.
using OpGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, OpNode,
                                      boost::no_property, boost::no_property, boost::vecS>;
using OpVertex = OpGraph::vertex_descriptor;

struct RankProgram {
  int rank = 0;          // global GPU rank this graph belongs to
  int multiplicity = 1;  // how many ranks this one stands for (identical-rank folding)
  OpGraph graph;
};

// One training step across the cluster.
struct StepGraph {
  std::string workload;           // model name
  int world_size = 0;
  std::vector<CommGroup> groups;  // communicators referenced by comm ops
  std::vector<RankProgram> ranks; // the simulated ranks (all, or one per identical class)
  double flops_per_step = 0;      // FLOPs of all ops of the step over all GPUs (with recompute)
  double model_flops_per_step = 0;  // the same without recomputation (MFU numerator)
  double tokens_per_step = 0;     // tokens (or samples, for DLRM) per step
  std::string throughput_unit;    // "tokens" or "samples"
  // Identical-rank folding: representative[r] is the simulated rank that stands for global
  // rank r (size world_size). Empty means every rank stands for itself. The executor uses
  // it to launch the traffic of folded ranks' collectives as background load.
  std::vector<int> representative;
};

}  // namespace overlapsim::sim
