#pragma once
// NCCL's cost constants, one place for the selection model (nccl_cost.cpp) and the costs a
// flow simulation adds on top of the wire (nccl_call_cost.cpp). Unless a row says
// otherwise: NCCL 2.30.7, src/graph/tuning.cc (ncclTunerConstantsDefaults,
// ncclTopoTuneModel, ncclTopoGetAlgoTime; github.com/NVIDIA/nccl master, June 2026).
// Hopper rows are used where NCCL distinguishes GPU generations. Left out, because they
// need NCCL's channel search which we do not model: per-channel bandwidth caps
// (perChMaxTreeBw, perChMaxRingLL128Bw), graph latencyInter, and the NVLS, CollNet and
// PAT algorithms.
#include <array>

namespace overlapsim::sim::detail::nccl {

inline constexpr double kUs = 1e-6;
inline constexpr double kGBps = 1e9;

// baseLatencies (us): {LL, LL128, Simple}.
inline constexpr std::array<double, 3> kTreeBaseLat_us = {6.8, 14.0, 8.4};
inline constexpr std::array<double, 3> kRingBaseLat_us = {6.6, 14.0, 8.4};
// hwLatencies (us) per step: [NVLink, PCI, NET][{LL, LL128, Simple}].
inline constexpr std::array<std::array<double, 3>, 3> kTreeHwLat_us = {{
    {0.6, 1.25, 4.0},  // NVLink
    {1.0, 1.9, 4.0},   // PCI
    {5.0, 8.5, 14.0},  // NET
}};
inline constexpr std::array<std::array<double, 3>, 3> kRingHwLat_us = {{
    {0.6, 1.9, 3.4},   // NVLink
    {1.0, 2.5, 5.7},   // PCI
    {2.7, 4.0, 14.0},  // NET
}};
enum Hw { kNvlink = 0, kPci = 1, kNet = 2 };
// getNetOverhead(): network post overhead, 1 us on x86 Intel (2 on AMD); tripled for Simple.
inline constexpr double kNetOverhead_us = 1.0;
// llMaxBws (GB/s): single node uses the GPU row (Hopper: 141); multi-node the CPU row
// (Intel: 39.0 for 2 nodes, 20.4 for more).
inline constexpr double kLlMaxBwOneNodeHopper_GBps = 141.0;
inline constexpr double kLlMaxBwTwoNodes_GBps = 39.0;
inline constexpr double kLlMaxBwManyNodes_GBps = 20.4;
// Bus bandwidth refinements of ncclTopoTuneModel: ring LL x0.5 (8-byte stores carry 4 bytes
// of data), ring LL128 x0.92 (120 of 128 bytes), tree x0.92, tree LL / 3.8, tree LL128
// x120/128 across nodes (x7/9 in one node).
inline constexpr double kLlPayload = 0.5;
inline constexpr double kRingLl128Payload = 0.92;
inline constexpr double kTreeEfficiency = 0.92;
inline constexpr double kTreeLlDivisor = 3.8;
inline constexpr double kTreeLl128MultiNode = 120.0 / 128.0;
inline constexpr double kTreeLl128OneNode = 7.0 / 9.0;
// "Plateau effect of ring": Simple ring allreduce latency x1.4 on sm80+ across nodes.
inline constexpr double kRingPlateau = 1.4;
// treeCorrectionFactor[protocol][log2(bytes / 64)], powers of two 64 B .. 256 MiB.
inline constexpr std::array<std::array<double, 23>, 3> kTreeCorrection = {{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}};

// NVLSTree (NVLink SHARP inside each node, a tree across nodes; Simple protocol only):
// baseLatencies 0, hwLatencies NVLink 25 us and NET 14 us; latency = NVLink +
// 2 x log2(nodes) x NET. The NET row is NCCL 2.26.2's (src/graph/tuning.cc hwLat, the version
// the published multi-node tables ran; 2.28 raised it to 20.9 us). Bandwidth (2.28 on, the
// form this model selects by): min(NVLS intra x 2 (all-reduce pipelines two operations),
// inter x 2 on <= 2 nodes) with nvlsEfficiency 0.85 on Hopper, a factor of the NVLS
// (intra-node) rate only.
inline constexpr double kNvlsTreeNvlinkLat_us = 25.0;
inline constexpr double kNvlsTreeNetLat_us = 14.0;
inline constexpr double kNvlsEfficiencyHopper = 0.85;
// NVLSTree's chunking (NCCL 2.26.2, src/enqueue.cc calcCollChunking, NVLS_TREE branch; the
// published tables of workloads/reference/collectives ran 2.26.2): every NVLS channel of every
// head rank moves one chunk per pipeline round, so a round is nvlsChannels x heads x chunk bytes.
// NVLS_NCHANNELS_SM90 = 16 (src/transport/nvls.cc, Hopper); NCCL_NVLS_CHUNKSIZE default
// 128 KiB (src/transport/nvls.cc); NCCL_NVLSTREE_MAX_CHUNKSIZE default: 64 KiB from 4 nodes on,
// else the NVLS chunk. Smaller messages shrink the chunk: below 32, 16, 4 and 1 rounds' worth
// of bytes at the current chunk, to at most 256, 128, 64 and 32 KiB.
inline constexpr int kNvlsChannelsHopper = 16;
inline constexpr double kNvlsChunk_bytes = 128 * 1024;
inline constexpr double kNvlsTreeMaxChunkManyNodes_bytes = 64 * 1024;
inline constexpr int kNvlsTreeMaxChunkMinNodes = 4;
struct ChunkShrink {
  double rounds;     // bytes < rounds x (channels x heads x chunk) ...
  double max_bytes;  // ... caps the chunk at this
};
inline constexpr std::array<ChunkShrink, 4> kNvlsTreeChunkShrink = {
    {{32, 256 * 1024}, {16, 128 * 1024}, {4, 64 * 1024}, {1, 32 * 1024}}};

// NVLink SHARP needs third-generation NVSwitch (NVLink 4, Hopper on): 18 links x 25 GB/s =
// 450 GB/s per GPU and direction (NVIDIA H100 datasheet). A host whose GPUs reach that rate
// over NVLink is taken to have it.
inline constexpr double kNvlink4PerGpu_Bps = 450e9;

// Point-to-point (all-to-all, send/recv; src/enqueue.cc, src/graph/paths.cc). tuning.cc has
// no p2p rows; these are what a grouped send/recv pays.
// NCCL_MAX_DEV_WORK_P2P_PER_BATCH (src/include/device.h): a channel runs up to 8 p2p
// operations of one round concurrently; ncclTopoComputeP2pChannels shrinks the channels
// per network peer until every peer fits into one round, so the peers a rank reaches at
// once are 8 x its p2p channels.
inline constexpr int kP2pPerBatch = 8;
// p2pnChannels: min(nChannels, NCCL_MAX_P2P_NCHANNELS), rounded to a power of two. Assumed 32:
// NCCL's channel search on 8-GPU NVSwitch nodes with 8 NICs builds 16-32 channels (2 per
// NIC for the ring graph, NCCL_NCHANNELS_PER_NET_PEER default 2), not modelled here.
inline constexpr int kP2pChannelsAssumed = 32;

// The proxy/NIC path. Measured InfiniBand NDR throughput through NCCL: "CX-7 NICs at NDR rate
// (400Gbps) should achieve up to 48-49GB/s per NIC" of the 50 GB/s line rate (NVIDIA,
// nccl-tests issue 267, 2025-01-23; issue 290 quotes 46-48 GB/s): 48.5 / 50.
inline constexpr double kNetAchievedFraction = 48.5 / 50.0;

}  // namespace overlapsim::sim::detail::nccl
