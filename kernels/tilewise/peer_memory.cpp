#include "kernels/tilewise/peer_memory.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstring>

#include "kernels/tilewise/signal_wait.hpp"

namespace overlapsim::kernels::tilewise {
namespace {

// Sums host doubles over ranks (outside any timed region; host-synchronising).
Status sum_over_ranks(CommHandle& comm, std::vector<double>& slots) {
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const Status s = allreduce_host(comm, stream, slots, ncclSum);
  cudaStreamDestroy(stream);
  return s;
}

// Every rank's bytes through the communicator: first the counts (so that a mismatch fails
// every rank instead of hanging NCCL on unequal calls), then each byte as a double in its
// rank's slots of a sum.
Status exchange_bytes_over_comm(CommHandle& comm, const std::vector<std::uint8_t>& mine,
                                std::vector<std::vector<std::uint8_t>>* all) {
  const auto world = static_cast<std::size_t>(comm.world);
  const auto me = static_cast<std::size_t>(comm.rank);
  std::vector<double> counts(world, 0.0);
  counts[me] = static_cast<double>(mine.size());
  OVERLAPSIM_TRY(sum_over_ranks(comm, counts));
  for (double c : counts)
    if (c != counts[me])
      return Status::failure("tilewise copy_engine: ranks exchanged different byte counts");
  std::vector<double> slots(world * mine.size(), 0.0);
  for (std::size_t i = 0; i < mine.size(); ++i) slots[me * mine.size() + i] = mine[i];
  if (!slots.empty()) OVERLAPSIM_TRY(sum_over_ranks(comm, slots));
  all->assign(world, std::vector<std::uint8_t>(mine.size()));
  for (std::size_t r = 0; r < world; ++r)
    for (std::size_t i = 0; i < mine.size(); ++i)
      (*all)[r][i] = static_cast<std::uint8_t>(slots[r * mine.size() + i]);
  return Status::success();
}

// What one buffer travels as across processes.
struct Exported {
  std::uint8_t present = 0;
  cudaIpcMemHandle_t handle{};
  std::uint64_t offset = 0;  // from the allocation's base
};
constexpr std::size_t kExportedBytes = 1 + sizeof(cudaIpcMemHandle_t) + sizeof(std::uint64_t);

void put(const Exported& e, std::uint8_t* out) {
  out[0] = e.present;
  std::memcpy(out + 1, &e.handle, sizeof e.handle);
  std::memcpy(out + 1 + sizeof e.handle, &e.offset, sizeof e.offset);
}

Exported get(const std::uint8_t* in) {
  Exported e;
  e.present = in[0];
  std::memcpy(&e.handle, in + 1, sizeof e.handle);
  std::memcpy(&e.offset, in + 1 + sizeof e.handle, sizeof e.offset);
  return e;
}

Status export_buffer(void* pointer, Exported* out) {
  if (pointer == nullptr) return Status::success();
  static PFN_cuMemGetAddressRange_v3020 address_range = nullptr;
  if (address_range == nullptr) {
    void* fn = nullptr;
    OVERLAPSIM_TRY(driver_entry_point("cuMemGetAddressRange", &fn, 3020));
    address_range = reinterpret_cast<PFN_cuMemGetAddressRange_v3020>(fn);
  }
  CUdeviceptr base = 0;
  std::size_t bytes = 0;
  if (address_range(&base, &bytes, reinterpret_cast<CUdeviceptr>(pointer)) != CUDA_SUCCESS)
    return Status::failure(
        "tilewise copy_engine: a buffer to share is not device memory from cudaMalloc");
  const cudaError_t e = cudaIpcGetMemHandle(&out->handle, reinterpret_cast<void*>(base));
  if (e != cudaSuccess) {
    cudaGetLastError();
    return Status::failure(
        std::string("tilewise copy_engine: cannot export a buffer to the other processes "
                    "(cudaIpcGetMemHandle: ") +
        cudaGetErrorString(e) + "); buffers must come from cudaMalloc");
  }
  out->present = 1;
  out->offset = reinterpret_cast<CUdeviceptr>(pointer) - base;
  return Status::success();
}

// A hash of this host's name: ranks of one host agree on it.
double host_tag() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  std::uint32_t h = 2166136261u;  // FNV-1a, 32 bits: exact in a double
  for (const char* c = name; *c != '\0'; ++c) h = (h ^ static_cast<std::uint8_t>(*c)) * 16777619u;
  return static_cast<double>(h);
}

}  // namespace

Status enable_peer_access(int device, int peer) {
  CUDA_CHECK(cudaSetDevice(device));
  int can = 0;
  CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device, peer));
  if (!can)
    return Status::failure("tilewise copy_engine: GPU " + std::to_string(device) +
                           " cannot access GPU " + std::to_string(peer) + " (no peer access)");
  const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // clears the sticky-free error the call left behind
    return Status::success();
  }
  CUDA_CHECK(e);
  return Status::success();
}

Status connect_peers(CommHandle& comm, const std::vector<void*>& mine,
                     std::vector<std::vector<void*>>* all) {
  const int world = comm.world;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  // Every rank's GPU first (shifted by one so that 0 stays "none"), then peer access,
  // then the addresses (whose check needs the access).
  std::vector<double> devices(static_cast<std::size_t>(world), 0.0);
  devices[static_cast<std::size_t>(comm.rank)] = static_cast<double>(device + 1);
  OVERLAPSIM_TRY(sum_over_ranks(comm, devices));
  for (int r = 0; r < world; ++r) {
    if (r == comm.rank) continue;
    const int peer_device = static_cast<int>(devices[static_cast<std::size_t>(r)]) - 1;
    if (peer_device == device)
      return Status::failure("tilewise copy_engine: ranks " + std::to_string(comm.rank) + " and " +
                             std::to_string(r) + " share GPU " + std::to_string(device) +
                             " (or run in different processes); one GPU per rank, one process");
    OVERLAPSIM_TRY(enable_peer_access(device, peer_device));
  }
  // Device addresses are below 2^53, so a double sum over ranks (each rank fills only its
  // own slots) carries them exactly.
  const std::size_t per = mine.size();
  std::vector<double> slots(per * static_cast<std::size_t>(world), 0.0);
  for (std::size_t i = 0; i < per; ++i) {
    const auto address = reinterpret_cast<std::uint64_t>(mine[i]);
    if (address >= (std::uint64_t{1} << 53))
      return Status::failure("tilewise copy_engine: a device address above 2^53");
    slots[static_cast<std::size_t>(comm.rank) * per + i] = static_cast<double>(address);
  }
  OVERLAPSIM_TRY(sum_over_ranks(comm, slots));
  all->assign(static_cast<std::size_t>(world), std::vector<void*>(per, nullptr));
  for (int r = 0; r < world; ++r)
    for (std::size_t i = 0; i < per; ++i) {
      void* address = reinterpret_cast<void*>(
          static_cast<std::uint64_t>(slots[static_cast<std::size_t>(r) * per + i]));
      (*all)[static_cast<std::size_t>(r)][i] = address;
      if (r == comm.rank || address == nullptr) continue;
      // Across processes these addresses mean nothing here (comm_peer_links uses IPC there).
      cudaPointerAttributes attributes{};
      const cudaError_t e = cudaPointerGetAttributes(&attributes, address);
      if (e != cudaSuccess || attributes.type != cudaMemoryTypeDevice) {
        cudaGetLastError();
        return Status::failure("tilewise copy_engine: rank " + std::to_string(r) +
                               "'s buffers are not addressable from this process (ranks in "
                               "different processes need comm_peer_links' IPC path)");
      }
    }
  return Status::success();
}

Status check_peer_links(const PeerLinks& links, const std::string& design) {
  const bool reachable = links.cross_process ? static_cast<bool>(links.exchange_bytes)
                                             : static_cast<bool>(links.exchange);
  if (links.world < 1 || links.rank < 0 || links.rank >= links.world || !reachable)
    return Status::failure(design +
                           ": peer links need world >= 1, 0 <= rank < world and an exchange, "
                           "got world " +
                           std::to_string(links.world) + ", rank " + std::to_string(links.rank));
  return Status::success();
}

Status comm_peer_links(CommHandle& comm, PeerLinks* links) {
  const auto world = static_cast<std::size_t>(comm.world);
  const auto me = static_cast<std::size_t>(comm.rank);
  // (host, process) of every rank: threads of one process share both.
  std::vector<double> tags(2 * world, 0.0);
  tags[2 * me] = host_tag();
  tags[2 * me + 1] = static_cast<double>(getpid());
  OVERLAPSIM_TRY(sum_over_ranks(comm, tags));
  bool one_process = true;
  for (std::size_t r = 0; r < world; ++r) {
    if (tags[2 * r] != tags[2 * me])
      return Status::failure("tilewise copy_engine: rank " + std::to_string(r) +
                             " is on another host; the copy-engine transport needs every rank "
                             "on this host's GPUs");
    one_process &= tags[2 * r + 1] == tags[2 * me + 1];
  }
  PeerLinks l;
  l.world = comm.world;
  l.rank = comm.rank;
  if (one_process) {
    l.exchange = [&comm](const std::vector<void*>& mine, std::vector<std::vector<void*>>* all) {
      return connect_peers(comm, mine, all);
    };
  } else {
    l.cross_process = true;
    l.exchange_bytes = [&comm](const std::vector<std::uint8_t>& mine,
                               std::vector<std::vector<std::uint8_t>>* all) {
      return exchange_bytes_over_comm(comm, mine, all);
    };
  }
  *links = std::move(l);
  return Status::success();
}

PeerMemory::~PeerMemory() {
  for (auto& [key, base] : mapped_) cudaIpcCloseMemHandle(base);
}

Status PeerMemory::share(const std::vector<void*>& mine, std::vector<std::vector<void*>>* all) {
  if (links_.cross_process) return share_by_ipc(mine, all);
  if (!links_.exchange) return Status::failure("tilewise copy_engine: no way to reach the peers");
  OVERLAPSIM_TRY(links_.exchange(mine, all));
  if (all->size() != static_cast<std::size_t>(links_.world))
    return Status::failure("tilewise copy_engine: the pointer exchange returned " +
                           std::to_string(all->size()) + " ranks, expected " +
                           std::to_string(links_.world));
  for (const auto& r : *all)
    if (r.size() != mine.size())
      return Status::failure("tilewise copy_engine: the pointer exchange lost pointers");
  return Status::success();
}

Status PeerMemory::barrier() {
  std::vector<std::vector<void*>> all;
  return share({}, &all);
}

Status PeerMemory::share_by_ipc(const std::vector<void*>& mine,
                                std::vector<std::vector<void*>>* all) {
  if (!links_.exchange_bytes)
    return Status::failure("tilewise copy_engine: no byte exchange between the processes");
  std::vector<std::uint8_t> bytes(mine.size() * kExportedBytes, 0);
  // A rank that cannot export still takes part in the exchange (marked absent), so no
  // peer is left waiting; the failure is reported after it.
  Status exported = Status::success();
  for (std::size_t i = 0; i < mine.size(); ++i) {
    Exported e;
    if (exported.ok) exported = export_buffer(mine[i], &e);
    put(e, bytes.data() + i * kExportedBytes);
  }
  std::vector<std::vector<std::uint8_t>> received;
  OVERLAPSIM_TRY(links_.exchange_bytes(bytes, &received));
  OVERLAPSIM_TRY(exported);
  if (received.size() != static_cast<std::size_t>(links_.world))
    return Status::failure("tilewise copy_engine: the byte exchange returned " +
                           std::to_string(received.size()) + " ranks");
  all->assign(received.size(), std::vector<void*>(mine.size(), nullptr));
  for (std::size_t r = 0; r < received.size(); ++r) {
    if (received[r].size() != bytes.size())
      return Status::failure("tilewise copy_engine: the byte exchange lost bytes");
    for (std::size_t i = 0; i < mine.size(); ++i) {
      if (static_cast<int>(r) == links_.rank) {
        (*all)[r][i] = mine[i];
        continue;
      }
      const Exported e = get(received[r].data() + i * kExportedBytes);
      if (e.present == 0) continue;
      const std::string key =
          std::to_string(r) + ":" +
          std::string(reinterpret_cast<const char*>(&e.handle), sizeof e.handle);
      auto found = mapped_.find(key);
      if (found == mapped_.end()) {
        void* base = nullptr;
        const cudaError_t err =
            cudaIpcOpenMemHandle(&base, e.handle, cudaIpcMemLazyEnablePeerAccess);
        if (err != cudaSuccess) {
          cudaGetLastError();
          return Status::failure("tilewise copy_engine: cannot map rank " + std::to_string(r) +
                                 "'s buffer into this process (cudaIpcOpenMemHandle: " +
                                 cudaGetErrorString(err) + ")");
        }
        found = mapped_.emplace(key, base).first;
      }
      (*all)[r][i] = static_cast<char*>(found->second) + e.offset;
    }
  }
  return Status::success();
}

}  // namespace overlapsim::kernels::tilewise
