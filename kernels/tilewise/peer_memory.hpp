#pragma once
// How a rank of the copy-engine transport (copy_engine_design.hpp) reaches its peers' device
// memory, in each of the ways ranks can be placed:
//   threads of one process, one GPU each (the harness's thread mode): UVA pointers are
//     valid on every GPU once peer access is on (connect_peers);
//   threads of one process sharing one GPU (SharedGpuPeers): the pointers as they are;
//   processes, one or more GPUs on one host (the harness's MPI mode): each buffer travels
//     as a CUDA IPC handle and an offset into its allocation, and is mapped into this
//     process (cudaIpcOpenMemHandle, peer access enabled lazily) until the PeerMemory that
//     mapped it goes away. The buffers must come from cudaMalloc (not a stream-ordered
//     pool, whose memory IPC handles cannot export).
// Every exchange is collective: every rank calls it in the same order with the same count.
// Host only, C++17.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernels/common/status.hpp"
#include "kernels/harness/comm.hpp"

namespace overlapsim::kernels::tilewise {

struct PeerLinks {
  // all[r] = rank r's pointers (or bytes); every rank gives the same count.
  using Exchange =
      std::function<Status(const std::vector<void*>& mine, std::vector<std::vector<void*>>* all)>;
  using ExchangeBytes = std::function<Status(const std::vector<std::uint8_t>& mine,
                                             std::vector<std::vector<std::uint8_t>>* all)>;
  int world = 1;
  int rank = 0;
  bool shared_gpu = false;     // every rank on this one GPU (no peer access needed)
  bool cross_process = false;  // ranks in different processes: IPC through exchange_bytes
  Exchange exchange;           // one process: pointers as they are
  ExchangeBytes exchange_bytes;
};

// Whether `links` can serve a design: a rank inside the world, and the exchange its ranks
// use (pointers between threads, bytes between processes). The failure names `design`.
Status check_peer_links(const PeerLinks& links, const std::string& design);

// Lets GPU `device` (made current) read and write `peer`'s memory: copies, stream writes
// and kernel stores on peer pointers. Already enabled is fine; no peer access is an error.
Status enable_peer_access(int device, int peer);

// Collective (threads of one process, one GPU each): enables peer access from this GPU to
// every other rank's and exchanges `mine`; all[r] are rank r's. Fails when the ranks
// share a GPU or are not threads of one process.
Status connect_peers(CommHandle& comm, const std::vector<void*>& mine,
                     std::vector<std::vector<void*>>* all);

// Collective: the links of a communicator's rank. Threads of one process exchange pointers
// (connect_peers); processes on one host exchange IPC handles through the communicator;
// ranks on different hosts are refused (the copy engines reach only this host's GPUs).
Status comm_peer_links(CommHandle& comm, PeerLinks* links);

class PeerMemory {
 public:
  PeerMemory() = default;
  explicit PeerMemory(PeerLinks links) : links_(std::move(links)) {}
  ~PeerMemory();
  PeerMemory(const PeerMemory&) = delete;
  PeerMemory& operator=(const PeerMemory&) = delete;

  const PeerLinks& links() const { return links_; }
  // Collective: all[r][i] = rank r's mine[i] as a pointer valid in this process (nullptr
  // stays nullptr). Across processes the peers' allocations are mapped once each.
  Status share(const std::vector<void*>& mine, std::vector<std::vector<void*>>* all);
  // Collective, exchanges nothing: every rank has arrived.
  Status barrier();

 private:
  Status share_by_ipc(const std::vector<void*>& mine, std::vector<std::vector<void*>>* all);

  PeerLinks links_;
  std::map<std::string, void*> mapped_;  // rank + IPC handle bytes → the mapping's base here
};

}  // namespace overlapsim::kernels::tilewise
