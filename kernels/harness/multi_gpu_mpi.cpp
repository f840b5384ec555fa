// MPI mode of the harness: one rank per process. Without OVERLAPSIM_WITH_MPI the entry
// point reports that this build has no MPI mode.
#include <string>

#include "kernels/harness/multi_gpu.hpp"
#include "kernels/harness/rank_lifecycle.hpp"

#ifdef OVERLAPSIM_WITH_MPI
#include <mpi.h>
#endif

namespace overlapsim::kernels {

#ifdef OVERLAPSIM_WITH_MPI

bool mpi_available() { return true; }

Status run_ranks_mpi(const HarnessOptions& options, const RankBody& body) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  int rank = 0;
  int world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  int local_rank = 0;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_free(&local);
  const int gpus = visible_gpu_count();
  if (gpus < 1) return Status::failure("harness (MPI rank " + std::to_string(rank) + "): no GPU");

  ncclUniqueId id;
  if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);

  RankContext ctx;
  Status status = prepare_rank(ctx, local_rank % gpus, rank, world, options);
  // Nobody enters NCCL init unless every process can.
  int prepared = status.ok ? 1 : 0;
  int all_prepared = 0;
  MPI_Allreduce(&prepared, &all_prepared, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (status.ok && !all_prepared) status = Status::failure("peer failed before NCCL init");
  if (status.ok) status = connect_rank(ctx, id, options);
  if (status.ok) status = body(ctx);
  Status closed = close_rank(ctx, !status.ok);
  if (status.ok) status = closed;
  // Every process learns whether any rank failed, so all exit non-zero together.
  int local_failed = status.ok ? 0 : 1;
  int any_failed = 0;
  MPI_Allreduce(&local_failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (status.ok && any_failed) status = Status::failure("peer failed (another MPI rank)");
  return status;
}

#else

bool mpi_available() { return false; }

Status run_ranks_mpi(const HarnessOptions&, const RankBody&) {
  return Status::failure(
      "harness: this build has no MPI mode (configure with -DOVERLAPSIM_MPI=ON)");
}

#endif

}  // namespace overlapsim::kernels
