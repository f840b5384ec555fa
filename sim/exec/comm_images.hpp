#pragma once
// Which simulated ranks meet in each communicator, and which communicators are symmetric
// images of a simulated one under identical-rank folding. Two groups are images of each
// other when they belong to the same family and their members have the same multiset of
// representatives (StepGraph::representative): e.g. with one representative per pipeline
// stage, every TP group of stage s is an image of the TP group holding stage s's
// representative. Images carry no simulated rank; their traffic is launched as background
// load when the simulated group's collective starts, so fabric contention is represented.
#include <optional>
#include <string_view>
#include <vector>

#include "sim/graph/op_graph.hpp"
#include "sim/network/network_api.hpp"

namespace overlapsim::sim {

enum class BackgroundImages {
  None,       // folded ranks' traffic is not simulated
  InterHost,  // only images that span hosts: an image inside one host uses only that
              // host's NVLink/NVSwitch links, which no other host's flows cross (not true
              // for PCIe-only hosts whose GPU and NIC traffic share switches: use All)
  All,
};

// The modes by name, as simulate --images and a reference run's `images:` spell them.
inline constexpr const char* kBackgroundImagesNames[] = {"none", "inter-host", "all"};
// The mode named `name` (one of kBackgroundImagesNames); nullopt for any other name.
std::optional<BackgroundImages> background_images_named(std::string_view name);

struct CommImagePlan {
  std::vector<int> simulated;  // indices into StepGraph::ranks of the members simulated
  std::vector<int> images;     // indices into StepGraph::groups
};

struct CommImagePlans {
  std::vector<int> program_of_rank;  // global rank -> index into StepGraph::ranks, or -1
  std::vector<CommImagePlan> groups;     // parallel to StepGraph::groups
};

// Throws std::invalid_argument for ranks outside the world, duplicate simulated ranks or
// a representative map of the wrong size.
CommImagePlans plan_comm_images(const StepGraph& step, const NetworkApi& net, BackgroundImages mode);

}  // namespace overlapsim::sim
