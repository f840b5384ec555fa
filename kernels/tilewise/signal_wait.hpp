#pragma once
// How the communication stream waits for a group of tiles (both are measured).
//   kernel        a one-thread kernel polls the group's counter with atomicCAS(target → 0)
//                 and nanosleep back-off; success also resets the counter for the next
//                 call, so no host round trip is needed. It occupies a thread slot on one
//                 SM while it waits.
//   stream_memop  cuStreamWaitValue32(counter ≥ target) then cuStreamWriteValue32(counter,
//                 0): the stream's front end waits, no SM is used. The driver functions
//                 come through cudaGetDriverEntryPointByVersion (no libcuda link, CI has no
//                 driver).
// The GEMM side publishes a tile only after all its stores, a barrier and a device-scope
// fence (epilogue.cuh), so whatever is enqueued after the wait sees the group's data.
// Both paths must be loaded before the first overlapped call (design.md: lazy loading
// deadlocks cross-stream waits): preload_signal_wait(). C++17.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/common/status.hpp"

namespace overlapsim::kernels::tilewise {

enum class WaitMode { Kernel, StreamMemOp };

const char* to_string(WaitMode mode);  // "kernel", "stream_memop"
std::optional<WaitMode> parse_wait_mode(std::string_view name);

// A driver API function by name and API version (cudaGetDriverEntryPointByVersion): no
// libcuda link. Also what peer_memory.cpp finds cuMemGetAddressRange with.
Status driver_entry_point(const char* name, void** fn, unsigned version = 11070);

// Loads the wait kernel's module and looks up the driver's stream memory operations.
Status preload_signal_wait();

// Enqueues on `stream`: wait until *counter >= target, then set it to 0. `timed_out`
// (device int, may be null) is set to 1 if the kernel wait gives up after `timeout_s`
// (a wrong tile count must not hang the GPU forever); the memop wait has no timeout.
Status enqueue_wait_and_reset(std::uint32_t* counter, std::uint32_t target, WaitMode mode,
                              int* timed_out, double timeout_s, cudaStream_t stream);

// Stream memory operations alone (no SM): wait until *address >= value (unsigned), and
// write value to *address once everything before it on the stream is done (with the
// driver's default memory barrier, so those earlier writes, copies included, are visible
// first). The address may be a peer GPU's memory (peer access enabled).
Status enqueue_wait_geq(const std::uint32_t* address, std::uint32_t value, cudaStream_t stream);
Status enqueue_write_value(std::uint32_t* address, std::uint32_t value, cudaStream_t stream);

}  // namespace overlapsim::kernels::tilewise
