#pragma once
// How one step of a plan runs on real device buffers: the local copies around the
// communication and the NCCL call itself. The GPU executor (kernels/redistribution/) follows
// a recipe literally and the plan's cost (cost.hpp) charges the same copies, so the two
// cannot disagree about which bytes are copied.
//
// Every device keeps its block of a layout as a dense row-major array of that block's box
// (layout.hpp block_of). A step reads its input block and writes a fresh output block;
// pieces that are not one contiguous run of a block are packed into (or received into) a
// staging buffer and copied from there, pieces that are go to NCCL directly:
//   slice           a view of the input when the kept box is contiguous in it, else one copy;
//   all-reduce      ncclAllReduce, input to output (out of place, so a plan can be re-run);
//   reduce-scatter  ncclReduceScatter; the input is packed member by member unless every
//                   member's box is already the k-th contiguous chunk of it;
//   all-gather      ncclAllGather into the output when member k's block is its k-th chunk,
//                   else into staging and unpacked;
//   all-to-all, permute, all-to-allv
//                   one NCCL group of ncclSend/ncclRecv, one per piece (step.hpp incoming()),
//                   in incoming()'s order on both sides; the device's own piece is a send to
//                   itself in an all-to-all (as nccl-tests' all-to-all, whose measured times
//                   the cost model holds), one copy before the exchange otherwise.
#include <cstdint>
#include <optional>
#include <vector>

#include "redistribution/plan.hpp"

namespace overlapsim::redistribution {

enum class BufferKind { Input, Output, Staging };

// A buffer holding the elements of `frame` densely, row-major, from element `offset` on.
struct Region {
  BufferKind buffer = BufferKind::Input;
  std::int64_t offset = 0;
  Box frame;
};

// Copy the elements of `box` (global indices, inside both frames) from src to dst.
struct BoxCopy {
  Region src, dst;
  Box box;
};

// A contiguous run of `count` elements of a buffer, from element `offset`.
struct Span {
  BufferKind buffer = BufferKind::Input;
  std::int64_t offset = 0;
  std::int64_t count = 0;
};

struct PeerSpan {
  int peer = 0;  // mesh device
  Span span;
};

enum class CallKind { None, AllReduce, ReduceScatter, AllGather, SendRecv };

struct StepRecipe {
  std::vector<BoxCopy> before;  // packing and the device's own piece, before the call
  CallKind call = CallKind::None;
  std::vector<int> group;  // the call's devices, in NCCL rank order (mesh.hpp group_of)
  // AllReduce, ReduceScatter, AllGather: the whole send and receive buffers (nccl-tests'
  // sizes: AllGather receives group.size() chunks of send.count).
  Span send, recv;
  std::vector<PeerSpan> sends, recvs;  // SendRecv
  std::vector<BoxCopy> after;          // unpacking, after the call
  std::int64_t staging_elements = 0;
  std::int64_t output_elements = 0;  // the output buffer (0 when it is a view)
  // Slice kept in place: the output block is the input's elements from this one on.
  std::optional<std::int64_t> output_view_offset;
};

// Whether `box` is one contiguous run of the row-major array of `frame` (box inside frame):
// every dimension before some k has extent 1 in the box and every one after k is whole.
bool contiguous_within(const Box& box, const Box& frame);
// The row-major position of box.lo in `frame`.
std::int64_t offset_within(const Box& box, const Box& frame);

// Every mesh device's recipe of step `step` of `plan` (index = device).
std::vector<StepRecipe> recipes(const Plan& plan, const Step& step);
// One device's (recipes()[device]).
StepRecipe recipe(const Plan& plan, const Step& step, int device);

// Elements a list of copies moves (each read once and written once).
std::int64_t copied_elements(const std::vector<BoxCopy>& copies);

}  // namespace overlapsim::redistribution
