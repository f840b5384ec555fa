// owner-epilogue-bench: what the copy-engine all-reduce's epilogue costs the GEMM on one
// GPU, with no communication. The GPU plays rank 0 of 2: the peer's partial of its part is
// preset in the receive buffer and its arrival flags are already at the call's epoch, so
// the epilogue reduces without waiting. Timed interleaved call by call (median of
// --iters after --warmup rounds, CUDA events), per shape:
//   own               the plain own GEMM (natural stores);
//   own_owner_reduce  the rank-rotated owner GEMM that reduces its own part (phase 2 by
//                     copy engines: no extra stores), without EpilogueArgs::prefetch_peer_l2,
//                     each pair summed through fp32 (packed_sum off);
//   own_owner_reduce_pf  the same with the prefetch (the peer's partial tile prefetched
//                     into L2 when its arrival is seen);
//   own_owner_reduce_h2  own_owner_reduce_pf summing each pair with the native paired add
//                     (EpilogueArgs::packed_sum; with the prefetch, the defaults);
//   own_owner_mirror_pf  own_owner_reduce_pf with its reduced tiles also stored into a second
//   buffer
//                     (EpilogueArgs::peer_out; phase 2 by the epilogue writes the peer's
//                     P over NVLink, here local memory: the SM-side cost of the extra
//                     stores, not the link's);
//   own_owner_mirror_h2  own_owner_mirror_pf with the native paired add;
//   own_owner_mirror_h2_remote  (with --peer-gpu G) own_owner_mirror_h2 with the mirror
//                     in GPU G's memory over NVLink, as phase 2 by the epilogue writes it:
//                     against own_owner_mirror_h2, what the remote stores cost the SMs.
// `wrong`: for the mirror variants, mirror elements that differ from P's reduced part; for
// the _h2 variants, elements of P's reduced part that differ from the fp32 sums' (one more
// call of each after the timed loop); plus 1 on every owner variant if an arrival wait
// timed out.
// --recv fresh rewrites the receive buffer (a device copy, untimed) before every timed call
// of every variant, as the peer's copy engine writes it just before the reduction reads it
// in the real design; cold (the default) leaves it to be evicted by the GEMM's traffic.
// One CSV row per measurement (overlap-bench's columns) after the header; exits 2 without
// an sm_90 GPU, 1 on a failed call.
//   owner-epilogue-bench [--shapes 4096x4096x4096,...] [--iters 30] [--warmup 5] [--groups 2]
//                        [--recv cold|fresh] [--peer-gpu G]
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/bench/bench_row.hpp"
#include "kernels/bench/flags.hpp"
#include "kernels/bench/timing.hpp"
#include "kernels/gemm/own_gemm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/tilewise/copy_engine_rehearsal.hpp"
#include "kernels/tilewise/peer_memory.hpp"

namespace {

namespace g = overlapsim::kernels::gemm;
namespace tw = overlapsim::kernels::tilewise;
using overlapsim::kernels::DeviceBuffer;
using overlapsim::kernels::DType;
using overlapsim::kernels::PairShape;
using overlapsim::kernels::Status;
using overlapsim::kernels::bench::BenchRow;

int fail(const std::string& what) {
  std::fprintf(stderr, "owner-epilogue-bench: %s\n", what.c_str());
  return 1;
}

// Bad arguments or no usable GPU: exit 2.
int usage(const std::string& what) {
  fail(what);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<PairShape> shapes = {{4096, 4096, 4096, 0},
                                   {2048, 8192, 8192, 0},
                                   {8192, 8192, 2048, 0},
                                   {16384, 8192, 4096, 0},
                                   {8192, 8192, 8192, 0}};
  int iters = 30, warmup = 5, groups = 2, peer_gpu = -1;
  bool fresh_recv = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return usage(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--shapes") {
      try {
        shapes = overlapsim::kernels::bench::parse_shape_list(value, "owner-epilogue-bench");
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
      }
    } else if (flag == "--iters") {
      iters = std::atoi(value.c_str());
    } else if (flag == "--warmup") {
      warmup = std::atoi(value.c_str());
    } else if (flag == "--recv") {
      if (value != "cold" && value != "fresh")
        return usage("--recv expects cold or fresh, got '" + value + "'");
      fresh_recv = value == "fresh";
    } else if (flag == "--peer-gpu") {
      peer_gpu = std::atoi(value.c_str());
    } else if (flag == "--groups") {
      groups = std::atoi(value.c_str());
    } else {
      return usage("unknown flag " + flag);
    }
  }
  if (iters < 1 || warmup < 0 || groups < 1)
    return usage("--iters >= 1, --warmup >= 0, --groups >= 1");
  if (peer_gpu == 0) return usage("--peer-gpu must name another GPU than 0");
  int gpus = 0;
  cudaDeviceProp prop{};
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 1 ||
      cudaGetDeviceProperties(&prop, 0) != cudaSuccess || prop.major != 9)
    return usage("needs an sm_90 GPU");
  if (peer_gpu > 0) {
    int can = 0;
    if (peer_gpu >= gpus || cudaDeviceCanAccessPeer(&can, 0, peer_gpu) != cudaSuccess || !can)
      return usage("--peer-gpu " + std::to_string(peer_gpu) + ": no such GPU or no peer access");
    const Status access = tw::enable_peer_access(0, peer_gpu);
    if (!access.ok) return fail(access.message);
  }
  const overlapsim::kernels::bench::DeviceTags tags =
      overlapsim::kernels::bench::read_device_tags(1);
  std::printf("%s\n", overlapsim::kernels::bench::csv_header().c_str());
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
    return fail("cudaStreamCreate");

  for (const PairShape& s : shapes) {
    const std::string label =
        std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    tw::CopyEngineRehearsal rehearsal;
    Status st = rehearsal.initialize(s.m, s.n, groups);
    if (!st.ok) return fail(label + ": " + st.message);
    const tw::CopyEngineLayout& plan = rehearsal.plan();
    const std::size_t mn = static_cast<std::size_t>(s.m * s.n);
    const std::size_t part = static_cast<std::size_t>(plan.part_elems);
    DeviceBuffer a, b, c_plain, p, mirror, recv_source;
    for (auto [buf, bytes] : std::vector<std::pair<DeviceBuffer*, std::size_t>>{
             {&a, static_cast<std::size_t>(s.m * s.k) * 2},
             {&b, static_cast<std::size_t>(s.n * s.k) * 2},
             {&c_plain, mn * 2},
             {&p, mn * 2},
             {&mirror, part * 2},
             {&recv_source, part * 2}})
      if (st.ok) st = buf->allocate(bytes);
    if (!st.ok) return fail(label + ": " + st.message);
    DeviceBuffer remote_mirror;  // on --peer-gpu
    if (peer_gpu > 0) {
      cudaSetDevice(peer_gpu);
      st = remote_mirror.allocate(part * 2);
      cudaSetDevice(0);
      if (!st.ok) return fail(label + ": " + st.message);
    }
    for (auto [buf, count, seed] : std::vector<std::tuple<void*, std::size_t, std::uint64_t>>{
             {a.data(), static_cast<std::size_t>(s.m * s.k), 11},
             {b.data(), static_cast<std::size_t>(s.n * s.k), 12},
             {recv_source.data(), part, 13}})
      if (st.ok) st = overlapsim::kernels::fill_random(buf, count, DType::BF16, seed, stream);
    if (!st.ok) return fail(label + ": " + st.message);
    const auto refresh_recv = [&] {
      return cudaMemcpyAsync(rehearsal.peer_partial(), recv_source.data(), part * 2,
                             cudaMemcpyDeviceToDevice, stream) == cudaSuccess;
    };
    if (!refresh_recv()) return fail(label + ": copying the peer's partial");

    const g::GemmArgs plain_args{s.m,      s.n,      s.k,           g::DType::kBf16,
                                 a.data(), b.data(), c_plain.data()};
    const g::GemmArgs owner_args{s.m, s.n, s.k, g::DType::kBf16, a.data(), b.data(), p.data()};
    g::EpilogueArgs e = rehearsal.epilogue(p.data());
    e.prefetch_peer_l2 = false;
    e.packed_sum = false;  // the fp32 sums: the _h2 variants set it (the default)
    const g::SchedulerOptions sched = rehearsal.scheduler();
    g::EpilogueArgs e_prefetch = e;
    e_prefetch.prefetch_peer_l2 = true;
    g::EpilogueArgs e_mirror = e_prefetch;
    e_mirror.peer_out = mirror.data();
    g::EpilogueArgs e_packed = e_prefetch;
    e_packed.packed_sum = true;
    g::EpilogueArgs e_mirror_packed = e_mirror;
    e_mirror_packed.packed_sum = true;
    g::EpilogueArgs e_remote = e_mirror_packed;
    e_remote.peer_out = remote_mirror.data();
    g::OwnGemm plain, reduce, prefetched, mirrored, packed, mirrored_packed, remote;
    for (auto [gemm, args, epi, sch] :
         std::vector<std::tuple<g::OwnGemm*, g::GemmArgs, g::EpilogueArgs, g::SchedulerOptions>>{
             {&plain, plain_args, g::EpilogueArgs{}, g::SchedulerOptions{}},
             {&reduce, owner_args, e, sched},
             {&prefetched, owner_args, e_prefetch, sched},
             {&mirrored, owner_args, e_mirror, sched},
             {&packed, owner_args, e_packed, sched},
             {&mirrored_packed, owner_args, e_mirror_packed, sched},
             {&remote, owner_args, e_remote, sched}})
      if (st.ok && (gemm != &remote || peer_gpu > 0)) st = gemm->initialize(args, epi, sch);
    if (!st.ok) return fail(label + ": " + st.message);

    // Each variant with what its `wrong` column counts: the mirror check (it stores a
    // mirror), the paired-add check (it sums with add.bf16x2), a timed-out wait (owner GEMMs).
    struct Variant {
      const char* name;
      std::function<Status()> run;
      bool owner, mirrors, paired;
    };
    const auto owner_run = [&](g::OwnGemm& gemm) {
      return [&gemm, &stream] { return gemm.run(stream, tw::CopyEngineRehearsal::kEpoch); };
    };
    std::vector<Variant> variants = {
        {"own", [&] { return plain.run(stream); }, false, false, false},
        {"own_owner_reduce", owner_run(reduce), true, false, false},
        {"own_owner_reduce_pf", owner_run(prefetched), true, false, false},
        {"own_owner_mirror_pf", owner_run(mirrored), true, true, false},
        {"own_owner_reduce_h2", owner_run(packed), true, false, true},
        {"own_owner_mirror_h2", owner_run(mirrored_packed), true, true, true}};
    if (peer_gpu > 0)
      variants.push_back({"own_owner_mirror_h2_remote", owner_run(remote), true, true, true});
    std::vector<cudaEvent_t> ev(2 * variants.size() * static_cast<std::size_t>(iters));
    for (auto& x : ev)
      if (cudaEventCreate(&x) != cudaSuccess) return fail("cudaEventCreate");
    for (int w = 0; w < warmup; ++w)
      for (const auto& v : variants)
        if (!(st = v.run()).ok) return fail(label + ": " + st.message);
    for (int it = 0; it < iters; ++it)
      for (std::size_t v = 0; v < variants.size(); ++v) {
        const std::size_t at = 2 * (static_cast<std::size_t>(it) * variants.size() + v);
        if (fresh_recv && !refresh_recv()) return fail(label + ": copying the peer's partial");
        cudaEventRecord(ev[at], stream);
        if (!(st = variants[v].run()).ok) return fail(label + ": " + st.message);
        cudaEventRecord(ev[at + 1], stream);
      }
    if (cudaStreamSynchronize(stream) != cudaSuccess) return fail(label + ": timed loop failed");
    int timed = 0;
    cudaMemcpy(&timed, rehearsal.timed_out(), sizeof timed, cudaMemcpyDeviceToHost);
    // The mirror must equal P's reduced part bit for bit (both come from one sum).
    std::vector<std::uint16_t> own_part(part), mirrored_part(part);
    cudaMemcpy(own_part.data(), p.as<char>() + plan.own_begin_elems * 2, part * 2,
               cudaMemcpyDeviceToHost);
    cudaMemcpy(mirrored_part.data(), mirror.data(), part * 2, cudaMemcpyDeviceToHost);
    std::uint64_t mirror_wrong = 0;
    for (std::size_t i = 0; i < part; ++i) mirror_wrong += own_part[i] != mirrored_part[i];
    if (peer_gpu > 0) {  // the remote mirror too (the last call to write it was its own)
      cudaMemcpy(mirrored_part.data(), remote_mirror.data(), part * 2, cudaMemcpyDeviceToHost);
      for (std::size_t i = 0; i < part; ++i) mirror_wrong += own_part[i] != mirrored_part[i];
    }
    // The native paired adds must give P's reduced part bit for bit as the fp32 sums.
    std::uint64_t packed_wrong = 0;
    {
      std::vector<std::uint16_t> fp32_sums(part), paired(part);
      const auto own_part_after = [&](g::OwnGemm& gemm, std::vector<std::uint16_t>& out) {
        return gemm.run(stream, tw::CopyEngineRehearsal::kEpoch).ok &&
               cudaMemcpyAsync(out.data(), p.as<char>() + plan.own_begin_elems * 2, part * 2,
                               cudaMemcpyDeviceToHost, stream) == cudaSuccess &&
               cudaStreamSynchronize(stream) == cudaSuccess;
      };
      if (!own_part_after(prefetched, fp32_sums) || !own_part_after(packed, paired))
        return fail(label + ": the paired-add check failed to run");
      for (std::size_t i = 0; i < part; ++i) packed_wrong += fp32_sums[i] != paired[i];
    }
    for (std::size_t v = 0; v < variants.size(); ++v) {
      std::vector<double> ms;
      for (int it = 0; it < iters; ++it) {
        const std::size_t at = 2 * (static_cast<std::size_t>(it) * variants.size() + v);
        float x = 0;
        cudaEventElapsedTime(&x, ev[at], ev[at + 1]);
        ms.push_back(x);
      }
      BenchRow r;
      r.op = "gemm";
      r.design = std::string(variants[v].name) + (fresh_recv ? "_fresh" : "");
      r.dtype = "bf16";
      r.m = s.m;
      r.n = s.n;
      r.k = s.k;
      r.chunks = variants[v].owner ? groups : 1;
      const overlapsim::kernels::bench::Timing t = overlapsim::kernels::bench::summarize(ms);
      r.time_s = t.median_s * 1e-3;
      r.time_min_s = t.min_s * 1e-3;
      r.time_max_s = t.max_s * 1e-3;
      r.flops = 2.0 * s.m * s.n * s.k;
      r.wrong = (variants[v].mirrors ? mirror_wrong : 0) + (variants[v].paired ? packed_wrong : 0) +
                (variants[v].owner && timed != 0 ? 1 : 0);
      std::printf("%s\n", overlapsim::kernels::bench::csv_line(tags, r).c_str());
    }
    std::fflush(stdout);
    for (auto& x : ev) cudaEventDestroy(x);
  }
  cudaStreamDestroy(stream);
  return 0;
}
