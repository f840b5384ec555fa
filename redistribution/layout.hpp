#pragma once
// An array's layout over a mesh, as a type: per array dimension the mesh axes it is split
// over, major first (JAX PartitionSpec), and the mesh axes over which it is a pending sum
// (DTensor Partial; JAX's `unreduced`). An axis that splits no dimension and holds no
// pending sum replicates the array. Splits are even: a dimension must be divisible by the
// product of its axes' sizes (uneven splits are rejected, see docs/redistribution.md).
//
// Device d holds, in dimension i split over axes (a1, ..., ak), the block number
// ((c[a1] * n[a2] + c[a2]) * ... ) * n[ak] + c[ak] of size shape[i] / (n[a1] * ... * n[ak]).
// Appending an axis to a dimension's list therefore refines every device's block.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redistribution/mesh.hpp"

namespace overlapsim::redistribution {

using Shape = std::vector<std::int64_t>;  // global extent per dimension, in elements

struct Layout {
  std::vector<std::vector<int>> dims;  // per array dimension: mesh axis indices, major first
  std::vector<int> partial;            // mesh axes with a pending sum, ascending

  bool operator==(const Layout&) const = default;
  // Whether mesh axis `axis` splits some dimension.
  bool splits(int axis) const;
  bool is_partial(int axis) const;
};

// A box of global indices: [lo[i], hi[i]) per dimension.
struct Box {
  std::vector<std::int64_t> lo, hi;
  std::int64_t elements() const;
  bool empty() const;
};
Box intersect(const Box& a, const Box& b);

// Product of the sizes of the axes splitting dimension `dim`.
std::int64_t split_factor(const Mesh& mesh, const Layout& layout, std::size_t dim);
// Elements each device holds.
std::int64_t local_elements(const Mesh& mesh, const Shape& shape, const Layout& layout);
// The global indices device `device` holds.
Box block_of(const Mesh& mesh, const Shape& shape, const Layout& layout, int device);

// Checks `layout` against the mesh and shape: axes in the mesh, each used at most once
// (as a split or a pending sum), dimensions divisible by their splits. Throws
// config::ConfigError "<what>: <problem> (expected ...)".
void validate(const Mesh& mesh, const Shape& shape, const Layout& layout, std::string_view what);

// Parses either notation for an array of `rank` dimensions and validates it:
//   JAX:    P('x', None), P(None, ('x','y')), PartitionSpec('x'), P('x', unreduced={'y'})
//           (fewer entries than dimensions: the rest are None)
//   DTensor: [Shard(0), Replicate(), Partial()] — one placement per mesh axis, in mesh
//           order; several Shard(d) of one dimension split it in mesh-axis order, as
//           DTensor's default; Shard(-1) counts from the end.
Layout parse_layout(std::string_view text, const Mesh& mesh, const Shape& shape,
                    std::string_view what);

// JAX notation: "P('x', None)", "P(None, ('x', 'y'), unreduced={'z'})".
std::string to_string(const Layout& layout, const Mesh& mesh);

// Parses "4096x8192" (each extent >= 1). Throws config::ConfigError naming `what`.
Shape parse_shape(std::string_view text, std::string_view what);
// Bytes per element of "bf16", "fp16", "fp32", "fp8", "int8", "int32", "int64", "fp64".
int parse_dtype_bytes(std::string_view text, std::string_view what);

}  // namespace overlapsim::redistribution
