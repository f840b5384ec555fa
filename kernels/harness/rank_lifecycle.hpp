#pragma once
// Setting one rank up and tearing it down, shared by thread mode and MPI mode.
#include <nccl.h>

#include "kernels/harness/multi_gpu.hpp"

namespace overlapsim::kernels {

// Selects the device and creates the streams (nothing that waits for other ranks).
Status prepare_rank(RankContext& ctx, int device, int rank, int world,
                    const HarnessOptions& options);
// Creates the communicator; every rank must get here (the callers check first that all
// ranks prepared, so a blocking init never waits for a rank that already failed).
Status connect_rank(RankContext& ctx, const ncclUniqueId& id, const HarnessOptions& options);

// After a successful body: drains the streams, finalizes and destroys the communicator.
// After a failure (`failed`): aborts the communicator. Streams are destroyed either way.
Status close_rank(RankContext& ctx, bool failed);

// Picks the failure to report among per-rank statuses (first not caused by a peer).
Status first_failure(const Status* statuses, int count);

}  // namespace overlapsim::kernels
