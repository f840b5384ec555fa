// Ranks over MPI: initialised only when a launcher started the process, finalised at exit.
#include <fmt/format.h>
#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <stdexcept>

#include "planning/ranks.hpp"

namespace overlapsim::planning {

namespace {

bool started_by_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(fmt::format("MPI: {} failed ({})", what, rc));
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

Ranks::Ranks(FromLauncher) {
  if (!started_by_launcher()) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // Only the main thread calls MPI; worker threads only simulate.
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    std::atexit(finalize_at_exit);
  }
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  MPI_Comm local;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
        "MPI_Comm_split_type");
  check(MPI_Comm_size(local, &local_size_), "MPI_Comm_size");
  MPI_Comm_free(&local);
  mpi_ = true;
}

const Ranks& Ranks::world() {
  static const Ranks ranks(FromLauncher{});
  return ranks;
}

std::vector<std::string> Ranks::all_gather(const std::string& mine) const {
  if (!mpi_) return {mine};
  if (mine.size() > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error("MPI: a rank's results exceed 2 GiB");
  const int length = static_cast<int>(mine.size());
  std::vector<int> lengths(static_cast<std::size_t>(size_));
  check(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD),
        "MPI_Allgather");
  std::vector<int> offsets(lengths.size());
  long long total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    if (total > INT_MAX) throw std::runtime_error("MPI: the ranks' results exceed 2 GiB");
    offsets[r] = static_cast<int>(total);
    total += lengths[r];
  }
  if (total > INT_MAX) throw std::runtime_error("MPI: the ranks' results exceed 2 GiB");
  std::string all(static_cast<std::size_t>(total), '\0');
  check(MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                       MPI_CHAR, MPI_COMM_WORLD),
        "MPI_Allgatherv");
  std::vector<std::string> out;
  for (std::size_t r = 0; r < lengths.size(); ++r)
    out.push_back(
        all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r])));
  return out;
}

}  // namespace overlapsim::planning
