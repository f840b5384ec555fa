#pragma once
// A device mesh: named axes with sizes, devices numbered row-major over the axes (the first
// axis is the most significant: device = ((c0 * n1) + c1) * n2 + c2 ...). This is the order
// of jax.sharding.Mesh over a reshaped device list and of torch DeviceMesh over
// torch.arange(n).reshape(sizes); on a cluster it puts the last (innermost) axis on
// neighbouring ranks, that is within a host where its size divides the GPUs per host.
#include <string>
#include <string_view>
#include <vector>

namespace overlapsim::redistribution {

struct Mesh {
  std::vector<std::string> axis_names;
  std::vector<int> axis_sizes;

  int num_axes() const { return static_cast<int>(axis_sizes.size()); }
  int num_devices() const;
  // The index of the axis called `name`, or -1.
  int axis_index(std::string_view name) const;
  // Device `device`'s coordinate along each axis.
  std::vector<int> coords(int device) const;
  int device(const std::vector<int>& coords) const;
  // "x=2,y=4"
  std::string to_string() const;
};

// Parses "x=2,y=4" (axis names are identifiers, sizes >= 1, names distinct, at most 2^20
// devices). Throws config::ConfigError naming `what` (the flag or key) and the problem.
Mesh parse_mesh(std::string_view text, std::string_view what);

// The devices that act together with `device` along `axes` (mesh axis indices): those whose
// coordinates agree with it on every other axis, ordered by their coordinates along `axes`
// (the first listed axis most significant).
std::vector<int> group_of(const Mesh& mesh, const std::vector<int>& axes, int device);
// Every such group once, in order of their smallest device.
std::vector<std::vector<int>> groups(const Mesh& mesh, const std::vector<int>& axes);

}  // namespace overlapsim::redistribution
