#include "redistribution/step.hpp"

#include <algorithm>
#include <stdexcept>

namespace overlapsim::redistribution {

const char* to_string(StepKind kind) {
  switch (kind) {
    case StepKind::Slice: return "slice";
    case StepKind::ReduceScatter: return "reduce-scatter";
    case StepKind::AllReduce: return "all-reduce";
    case StepKind::AllToAll: return "all-to-all";
    case StepKind::Permute: return "permute";
    case StepKind::AllToAllV: return "all-to-allv";
    case StepKind::AllGather: return "all-gather";
  }
  return "?";
}

bool is_collective(StepKind kind) { return kind != StepKind::Slice; }

std::vector<Piece> incoming(const Mesh& mesh, const Shape& shape, const Step& step, int device) {
  std::vector<Piece> pieces;
  const Box want = block_of(mesh, shape, step.out, device);
  const std::vector<int> group = group_of(mesh, step.axes, device);
  if (step.kind == StepKind::ReduceScatter) {
    for (int m : group) pieces.push_back({m, want});
    return pieces;
  }
  const std::vector<int> own = mesh.coords(device);
  std::vector<int> replicated;  // group axes along which `in` holds copies
  for (int a : step.axes)
    if (!step.in.splits(a)) replicated.push_back(a);
  auto add = [&](int m) {
    Box b = intersect(block_of(mesh, shape, step.in, m), want);
    if (!b.empty()) pieces.push_back({m, std::move(b)});
  };
  add(device);
  for (int m : group) {
    if (m == device) continue;
    const std::vector<int> c = mesh.coords(m);
    bool same_copy = true;
    for (int a : replicated)
      same_copy = same_copy && c[static_cast<std::size_t>(a)] == own[static_cast<std::size_t>(a)];
    if (same_copy) add(m);
  }
  return pieces;
}

Step make_step(const Mesh& mesh, const Shape& shape, StepKind kind, std::vector<int> axes,
               Layout in, Layout out) {
  Step s;
  s.kind = kind;
  s.axes = std::move(axes);
  s.in = std::move(in);
  s.out = std::move(out);
  s.in_elements = local_elements(mesh, shape, s.in);
  s.out_elements = local_elements(mesh, shape, s.out);
  const int n = mesh.num_devices();
  s.received_elements.assign(static_cast<std::size_t>(n), 0);
  s.sent_elements.assign(static_cast<std::size_t>(n), 0);
  if (kind == StepKind::Slice) return s;
  int members = 1;
  for (int a : s.axes) members *= mesh.axis_sizes[static_cast<std::size_t>(a)];
  if (kind == StepKind::AllReduce) {
    // Reduce-scatter of the pieces, then all-gather of the reduced pieces: a device receives
    // every other member's copy of its own piece, then every other piece once.
    for (int d = 0; d < n; ++d) {
      const std::vector<int> group = group_of(mesh, s.axes, d);
      const int k = static_cast<int>(std::find(group.begin(), group.end(), d) - group.begin());
      const std::int64_t piece = allreduce_piece_begin(s.in_elements, members, k + 1) -
                                 allreduce_piece_begin(s.in_elements, members, k);
      s.received_elements[static_cast<std::size_t>(d)] =
          (members - 1) * piece + (s.in_elements - piece);
      s.sent_elements[static_cast<std::size_t>(d)] = (s.in_elements - piece) + (members - 1) * piece;
    }
    s.buffer_elements = 0;  // in place
    return s;
  }
  if (kind == StepKind::ReduceScatter) {
    for (int d = 0; d < n; ++d) {
      s.received_elements[static_cast<std::size_t>(d)] = (members - 1) * s.out_elements;
      s.sent_elements[static_cast<std::size_t>(d)] = (members - 1) * s.out_elements;
    }
    s.buffer_elements = 0;  // in place (NCCL's in-place reduce-scatter)
    return s;
  }
  // Data-moving steps: what a device keeps is the overlap of its input and output blocks;
  // the rest of its output block arrives from other members.
  for (int d = 0; d < n; ++d) {
    const Box kept = intersect(block_of(mesh, shape, s.in, d), block_of(mesh, shape, s.out, d));
    s.received_elements[static_cast<std::size_t>(d)] = s.out_elements - kept.elements();
  }
  s.buffer_elements = s.out_elements;
  bool permute = true, uniform = true;
  std::int64_t pair = -1;
  for (int d = 0; d < n; ++d) {
    const std::vector<Piece> pieces = incoming(mesh, shape, s, d);
    int remote = 0;
    for (const Piece& p : pieces) {
      if (p.from == d) continue;
      ++remote;
      const std::int64_t e = p.box.elements();
      s.sent_elements[static_cast<std::size_t>(p.from)] += e;
      s.max_pair_elements = std::max(s.max_pair_elements, e);
      if (pair < 0) pair = e;
      uniform = uniform && e == pair;
    }
    permute = permute && pieces.size() == 1;
    uniform = uniform && remote == members - 1;
  }
  if (kind == StepKind::AllToAllV)
    s.kind = permute ? StepKind::Permute : uniform ? StepKind::AllToAll : StepKind::AllToAllV;
  return s;
}

}  // namespace overlapsim::redistribution
