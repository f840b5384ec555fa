#pragma once
// One step of a redistribution plan: the layout before and after, the mesh axes whose
// devices act together (the group), and what every device receives. A step is either local
// (Slice) or one collective per group: every group of the mesh along `axes` (mesh.hpp
// group_of) runs the same collective at the same time.
#include <cstdint>
#include <vector>

#include "redistribution/layout.hpp"
#include "redistribution/mesh.hpp"

namespace overlapsim::redistribution {

enum class StepKind {
  Slice,          // local: each device keeps a sub-block of what it holds, in place
  ReduceScatter,  // pending sums over `axes` reduced, each device keeping its sub-block
  AllReduce,      // pending sums over `axes` reduced, every device keeping the whole block
  AllToAll,       // blocks re-split: every device sends an equal piece to every other member
  Permute,        // blocks moved whole: every device receives its block from one member
  AllToAllV,      // blocks re-split with unequal pieces
  AllGather,      // blocks joined: every device receives the other members' blocks
};
const char* to_string(StepKind kind);  // "slice", "reduce-scatter", ..., "all-gather"
bool is_collective(StepKind kind);

// A piece of a device's output block and the group member it comes from (for a
// ReduceScatter, one of the pending sums to add).
struct Piece {
  int from = 0;
  Box box;
};

struct Step {
  StepKind kind = StepKind::Slice;
  std::vector<int> axes;  // mesh axes of the groups, major first (empty for Slice)
  Layout in, out;
  std::int64_t in_elements = 0;   // per device
  std::int64_t out_elements = 0;  // per device
  // Elements each device receives from other devices (indexed by device).
  std::vector<std::int64_t> received_elements;
  // Elements each device sends to another device in this step (indexed by device).
  std::vector<std::int64_t> sent_elements;
  // Receive buffer the step allocates beside its input, per device; 0 for steps in place
  // (Slice, ReduceScatter and AllReduce, as NCCL runs the reductions in place).
  std::int64_t buffer_elements = 0;
  // Largest piece one device sends to one other device (AllToAll, AllToAllV, Permute).
  std::int64_t max_pair_elements = 0;

  // Per device, the most elements held at once during the step.
  std::int64_t peak_elements() const { return in_elements + buffer_elements; }
};

// Where device `device`'s output block comes from, for the data-moving kinds (AllToAll,
// Permute, AllToAllV, AllGather: pieces tile the output block, the device itself first when
// it holds a piece; ReduceScatter: one piece per member, all equal to the output block).
// Members that replicate the same data (axes of the group that do not split `in`) are
// skipped except the one at the device's own coordinate, so each piece has one sender.
std::vector<Piece> incoming(const Mesh& mesh, const Shape& shape, const Step& step, int device);

// The AllReduce's split of a device's `elements`-long buffer into the group's `members`
// pieces (reduce-scatter then all-gather): piece k is [begin(k), begin(k+1)).
inline std::int64_t allreduce_piece_begin(std::int64_t elements, int members, int k) {
  return elements * k / members;
}

// A step from `in` to `out` over `axes`, with its counts filled in; data-moving steps are
// classified as AllToAll, Permute or AllToAllV from their pieces (pass StepKind::AllToAllV).
Step make_step(const Mesh& mesh, const Shape& shape, StepKind kind, std::vector<int> axes,
               Layout in, Layout out);

}  // namespace overlapsim::redistribution
