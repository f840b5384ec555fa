#pragma once
// The processes of one `mpirun -np N overlapsim plan ...` launch, which share a plan's
// sweep: each runs its share of the configurations and every rank receives every rank's
// results. Without mpirun (or in a build without MPI) there is one rank and MPI is never
// touched, so a plain run needs no launcher.
#include <string>
#include <vector>

namespace overlapsim::planning {

class Ranks {
 public:
  // This process's view, made on first use: joins MPI only when a launcher started the
  // process (Open MPI's OMPI_COMM_WORLD_SIZE, or a PMI/PMIx launcher's variables).
  static const Ranks& world();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }
  // Ranks on this host (they share its cores).
  int local_size() const { return local_size_; }

  // A collective: every rank passes its text and receives all ranks' texts in rank order.
  // With one rank: {mine}.
  std::vector<std::string> all_gather(const std::string& mine) const;

  // A single rank, for tests and library callers that do not launch through mpirun.
  Ranks() = default;

 private:
  struct FromLauncher {};
  explicit Ranks(FromLauncher);
  int rank_ = 0, size_ = 1, local_size_ = 1;
  bool mpi_ = false;
};

}  // namespace overlapsim::planning
