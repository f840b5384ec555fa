// Ranks in a build without MPI: a single rank. Started by mpirun with more ranks, each
// process would run the whole sweep and write the same files, so that is refused.
#include <cstdlib>
#include <stdexcept>

#include "planning/ranks.hpp"

namespace overlapsim::planning {

Ranks::Ranks(FromLauncher) {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* n = std::getenv(v); n && std::atoi(n) > 1)
      throw std::runtime_error(
          "started by mpirun with several ranks, but this overlapsim was built without MPI "
          "(install Open MPI, e.g. the Debian package libopenmpi-dev, and rebuild)");
}

const Ranks& Ranks::world() {
  static const Ranks ranks(FromLauncher{});
  return ranks;
}

std::vector<std::string> Ranks::all_gather(const std::string& mine) const { return {mine}; }

}  // namespace overlapsim::planning
