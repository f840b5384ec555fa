#include "redistribution/recipe.hpp"

#include <algorithm>
#include <stdexcept>

namespace overlapsim::redistribution {

bool contiguous_within(const Box& box, const Box& frame) {
  const std::size_t n = box.lo.size();
  // The first dimension (from the left) where the box has more than one index: every later
  // one must be whole.
  std::size_t k = 0;
  while (k < n && box.hi[k] - box.lo[k] == 1) ++k;
  for (std::size_t i = k + 1; i < n; ++i)
    if (box.lo[i] != frame.lo[i] || box.hi[i] != frame.hi[i]) return false;
  return true;
}

std::int64_t offset_within(const Box& box, const Box& frame) {
  std::int64_t off = 0;
  for (std::size_t i = 0; i < box.lo.size(); ++i)
    off = off * (frame.hi[i] - frame.lo[i]) + (box.lo[i] - frame.lo[i]);
  return off;
}

std::int64_t copied_elements(const std::vector<BoxCopy>& copies) {
  std::int64_t n = 0;
  for (const BoxCopy& c : copies) n += c.box.elements();
  return n;
}

namespace {

Region whole(BufferKind buffer, const Box& frame) { return {buffer, 0, frame}; }

// Member k's chunk of a collective's buffer is box k when box k is contiguous in `frame`
// and starts at k * chunk.
bool chunks_in_place(const std::vector<Box>& boxes, const Box& frame, std::int64_t chunk) {
  for (std::size_t k = 0; k < boxes.size(); ++k)
    if (boxes[k].elements() != chunk || !contiguous_within(boxes[k], frame) ||
        offset_within(boxes[k], frame) != static_cast<std::int64_t>(k) * chunk)
      return false;
  return true;
}

// A send or receive of `box`: straight from/into `frame`'s buffer when contiguous there,
// else through a new staging chunk (with the copy that fills or empties it).
Span place(const Box& box, BufferKind buffer, const Box& frame, bool sending, StepRecipe& r) {
  const std::int64_t n = box.elements();
  if (contiguous_within(box, frame)) return {buffer, offset_within(box, frame), n};
  const Span staged{BufferKind::Staging, r.staging_elements, n};
  const Region stage{BufferKind::Staging, r.staging_elements, box};
  r.staging_elements += n;
  if (sending)
    r.before.push_back({whole(buffer, frame), stage, box});
  else
    r.after.push_back({stage, whole(buffer, frame), box});
  return staged;
}

// The device's receives and own piece from its incoming() pieces; recipes() adds the sends
// from the receivers' pieces. With `self_through_nccl` the own piece is a send/recv to
// itself like the others (nccl-tests' all-to-all, whose times the cost model's curve holds:
// NCCL copies it inside the exchange), else one copy before the exchange.
void receive(int device, const std::vector<Piece>& pieces, std::int64_t out_elements,
             const Box& in, const Box& out, bool self_through_nccl, StepRecipe& r) {
  r.call = CallKind::SendRecv;
  r.output_elements = out_elements;
  for (const Piece& p : pieces) {
    if (p.from == device && !self_through_nccl)
      r.before.push_back({whole(BufferKind::Input, in), whole(BufferKind::Output, out), p.box});
    else
      r.recvs.push_back({p.from, place(p.box, BufferKind::Output, out, false, r)});
  }
}

}  // namespace

namespace {

// Every kind but the send/recv exchanges; those (and an all-gather whose members hold
// copies) come back with call == SendRecv and only `group` set, for recipes() to fill.
StepRecipe one_device(const Plan& plan, const Step& s, int device) {
  const Mesh& mesh = plan.mesh;
  const Box in = block_of(mesh, plan.shape, s.in, device);
  const Box out = block_of(mesh, plan.shape, s.out, device);
  StepRecipe r;
  if (s.kind == StepKind::Slice) {
    if (contiguous_within(out, in))
      r.output_view_offset = offset_within(out, in);
    else {
      r.output_elements = s.out_elements;
      r.before.push_back({whole(BufferKind::Input, in), whole(BufferKind::Output, out), out});
    }
    return r;
  }
  r.group = group_of(mesh, s.axes, device);
  const auto n = static_cast<std::int64_t>(r.group.size());
  switch (s.kind) {
    case StepKind::Slice: break;
    case StepKind::AllReduce:
      r.call = CallKind::AllReduce;
      r.output_elements = s.out_elements;
      r.send = {BufferKind::Input, 0, s.in_elements};
      r.recv = {BufferKind::Output, 0, s.out_elements};
      return r;
    case StepKind::ReduceScatter: {
      r.call = CallKind::ReduceScatter;
      r.output_elements = s.out_elements;
      std::vector<Box> boxes;
      for (int m : r.group) boxes.push_back(block_of(mesh, plan.shape, s.out, m));
      r.recv = {BufferKind::Output, 0, s.out_elements};
      if (chunks_in_place(boxes, in, s.out_elements)) {
        r.send = {BufferKind::Input, 0, n * s.out_elements};
        return r;
      }
      for (std::size_t k = 0; k < boxes.size(); ++k)
        r.before.push_back({whole(BufferKind::Input, in),
                            {BufferKind::Staging, static_cast<std::int64_t>(k) * s.out_elements,
                             boxes[k]},
                            boxes[k]});
      r.staging_elements = n * s.out_elements;
      r.send = {BufferKind::Staging, 0, n * s.out_elements};
      return r;
    }
    case StepKind::AllGather: {
      std::vector<Box> boxes;
      std::int64_t covered = 0;
      for (int m : r.group) {
        boxes.push_back(block_of(mesh, plan.shape, s.in, m));
        covered += intersect(boxes.back(), out).elements();
      }
      // NCCL's all-gather needs every member to hold a distinct part of the output; a group
      // whose members hold copies runs as send/recv of the pieces instead.
      if (covered != s.out_elements || n * s.in_elements != s.out_elements) {
        r.call = CallKind::SendRecv;
        return r;
      }
      r.call = CallKind::AllGather;
      r.output_elements = s.out_elements;
      r.send = {BufferKind::Input, 0, s.in_elements};
      if (chunks_in_place(boxes, out, s.in_elements)) {
        r.recv = {BufferKind::Output, 0, s.out_elements};
        return r;
      }
      r.staging_elements = s.out_elements;
      r.recv = {BufferKind::Staging, 0, s.out_elements};
      for (std::size_t k = 0; k < boxes.size(); ++k)
        r.after.push_back({{BufferKind::Staging, static_cast<std::int64_t>(k) * s.in_elements,
                            boxes[k]},
                           whole(BufferKind::Output, out),
                           boxes[k]});
      return r;
    }
    case StepKind::AllToAll:
    case StepKind::Permute:
    case StepKind::AllToAllV:
      r.call = CallKind::SendRecv;
      return r;
  }
  throw std::logic_error("recipe: unknown step kind");
}

}  // namespace

std::vector<StepRecipe> recipes(const Plan& plan, const Step& s) {
  const int n = plan.mesh.num_devices();
  std::vector<StepRecipe> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d) out.push_back(one_device(plan, s, d));
  if (s.kind == StepKind::Slice || out.front().call != CallKind::SendRecv) return out;
  // Receives first, in each receiver's incoming() order; then each sender's sends, receiver
  // by receiver in device order and, per receiver, in its incoming() order, so the k-th send
  // from a to b matches b's k-th receive from a (NCCL pairs a group's calls per peer in order).
  // An all-to-all is costed as NCCL's (cost.hpp), which moves the own piece too.
  const bool self = s.kind == StepKind::AllToAll;
  std::vector<std::vector<Piece>> pieces(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d) {
    auto& r = out[static_cast<std::size_t>(d)];
    pieces[static_cast<std::size_t>(d)] = incoming(plan.mesh, plan.shape, s, d);
    receive(d, pieces[static_cast<std::size_t>(d)], s.out_elements,
            block_of(plan.mesh, plan.shape, s.in, d), block_of(plan.mesh, plan.shape, s.out, d),
            self, r);
  }
  std::vector<Box> in_blocks;
  for (int d = 0; d < n; ++d) in_blocks.push_back(block_of(plan.mesh, plan.shape, s.in, d));
  for (int m = 0; m < n; ++m)
    for (const Piece& p : pieces[static_cast<std::size_t>(m)]) {
      if (p.from == m && !self) continue;
      auto& r = out[static_cast<std::size_t>(p.from)];
      r.sends.push_back(
          {m, place(p.box, BufferKind::Input, in_blocks[static_cast<std::size_t>(p.from)], true, r)});
    }
  return out;
}

StepRecipe recipe(const Plan& plan, const Step& s, int device) {
  return recipes(plan, s)[static_cast<std::size_t>(device)];
}

}  // namespace overlapsim::redistribution
