#include "redistribution/executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace overlapsim::redistribution {
namespace {

using Value = std::int64_t;

struct Shard {
  Box box;
  std::vector<Value> data;  // row-major over box
};

bool contains(const Box& outer, const Box& inner) {
  for (std::size_t i = 0; i < outer.lo.size(); ++i)
    if (inner.lo[i] < outer.lo[i] || inner.hi[i] > outer.hi[i]) return false;
  return true;
}

std::int64_t offset_in(const Box& box, const std::vector<std::int64_t>& idx) {
  std::int64_t off = 0;
  for (std::size_t i = 0; i < idx.size(); ++i) off = off * (box.hi[i] - box.lo[i]) + (idx[i] - box.lo[i]);
  return off;
}

std::int64_t global_index(const Shape& shape, const std::vector<std::int64_t>& idx) {
  std::int64_t g = 0;
  for (std::size_t i = 0; i < idx.size(); ++i) g = g * shape[i] + idx[i];
  return g;
}

// Calls f(idx) for every index of `box`, row-major.
template <class F>
void for_each_index(const Box& box, F&& f) {
  if (box.empty()) return;
  std::vector<std::int64_t> idx = box.lo;
  while (true) {
    f(idx);
    std::size_t i = idx.size();
    while (i > 0) {
      --i;
      if (++idx[i] < box.hi[i]) break;
      idx[i] = box.lo[i];
      if (i == 0) return;
    }
    if (idx.empty()) return;
  }
}

// The index of `device` among the devices of its pending-sum group (0 .. product - 1).
int partial_index(const Mesh& mesh, const Layout& l, int device) {
  const std::vector<int> c = mesh.coords(device);
  int q = 0;
  for (int a : l.partial) q = q * mesh.axis_sizes[static_cast<std::size_t>(a)] + c[static_cast<std::size_t>(a)];
  return q;
}

int partial_count(const Mesh& mesh, const Layout& l) {
  int n = 1;
  for (int a : l.partial) n *= mesh.axis_sizes[static_cast<std::size_t>(a)];
  return n;
}

// The addend device q of a pending-sum group of `count` holds for element g: small numbers
// that differ per device, the first device holding the rest so that they sum to g.
Value addend(std::int64_t g, int q, int count) {
  auto f = [&](int k) { return static_cast<Value>((g * 31 + k * 17) % 7) - 3; };
  if (q > 0) return f(q);
  Value rest = g;
  for (int k = 1; k < count; ++k) rest -= f(k);
  return rest;
}

}  // namespace

Execution execute(const Plan& plan) {
  const Mesh& mesh = plan.mesh;
  const Shape& shape = plan.shape;
  const int n = mesh.num_devices();
  std::int64_t global = 1;
  for (auto e : shape) global *= e;
  Execution ex;
  ex.received_elements.assign(static_cast<std::size_t>(n), 0);

  std::vector<Shard> shards(static_cast<std::size_t>(n));
  const int count0 = partial_count(mesh, plan.from);
  for (int d = 0; d < n; ++d) {
    Shard& s = shards[static_cast<std::size_t>(d)];
    s.box = block_of(mesh, shape, plan.from, d);
    const int q = partial_index(mesh, plan.from, d);
    s.data.reserve(static_cast<std::size_t>(s.box.elements()));
    for_each_index(s.box, [&](const auto& idx) { s.data.push_back(addend(global_index(shape, idx), q, count0)); });
    ex.peak_elements = std::max<std::int64_t>(ex.peak_elements, static_cast<std::int64_t>(s.data.size()));
  }
  // Which elements each device has held in final form (the target's pending sums only).
  std::vector<std::vector<char>> held(static_cast<std::size_t>(n), std::vector<char>(static_cast<std::size_t>(global), 0));
  auto final_form = [&](const Layout& l) { return partial_count(mesh, l) == partial_count(mesh, plan.to); };
  auto mark_held = [&](const Layout& l) {
    if (!final_form(l)) return;
    for (int d = 0; d < n; ++d)
      for_each_index(shards[static_cast<std::size_t>(d)].box, [&](const auto& idx) {
        held[static_cast<std::size_t>(d)][static_cast<std::size_t>(global_index(shape, idx))] = 1;
      });
  };
  mark_held(plan.from);
  std::vector<Box> target(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d) target[static_cast<std::size_t>(d)] = block_of(mesh, shape, plan.to, d);

  for (const Step& step : plan.steps) {
    std::vector<Shard> next(static_cast<std::size_t>(n));
    for (int d = 0; d < n; ++d) {
      const Shard& mine = shards[static_cast<std::size_t>(d)];
      Shard& out = next[static_cast<std::size_t>(d)];
      out.box = block_of(mesh, shape, step.out, d);
      out.data.assign(static_cast<std::size_t>(out.box.elements()), 0);
      std::int64_t held_now = static_cast<std::int64_t>(mine.data.size());
      if (step.kind == StepKind::Slice) {
        if (!contains(mine.box, out.box))
          throw std::logic_error(fmt::format("slice: device {} does not hold its new block", d));
        for_each_index(out.box, [&](const auto& idx) {
          out.data[static_cast<std::size_t>(offset_in(out.box, idx))] =
              mine.data[static_cast<std::size_t>(offset_in(mine.box, idx))];
        });
      } else if (step.kind == StepKind::AllReduce) {
        // Reduce-scatter of the flat pieces, then all-gather of the reduced pieces.
        const std::vector<int> group = group_of(mesh, step.axes, d);
        const int members = static_cast<int>(group.size());
        const std::int64_t len = static_cast<std::int64_t>(mine.data.size());
        for (int k = 0; k < members; ++k) {
          const int owner = group[static_cast<std::size_t>(k)];
          const std::int64_t b = allreduce_piece_begin(len, members, k);
          const std::int64_t e = allreduce_piece_begin(len, members, k + 1);
          for (int m : group) {
            const Shard& src = shards[static_cast<std::size_t>(m)];
            if (src.box.lo != mine.box.lo || src.box.hi != mine.box.hi)
              throw std::logic_error("all-reduce: members hold different blocks");
            for (std::int64_t i = b; i < e; ++i) out.data[static_cast<std::size_t>(i)] += src.data[static_cast<std::size_t>(i)];
          }
          // The owner received the other members' copies of its piece; everyone else
          // receives the reduced piece from the owner.
          ex.received_elements[static_cast<std::size_t>(d)] += owner == d ? (members - 1) * (e - b) : (e - b);
        }
      } else {
        std::vector<char> filled(out.data.size(), 0);
        const bool reduce = step.kind == StepKind::ReduceScatter;
        for (const Piece& p : incoming(mesh, shape, step, d)) {
          const Shard& src = shards[static_cast<std::size_t>(p.from)];
          if (!contains(src.box, p.box))
            throw std::logic_error(fmt::format("{}: device {} sends data it does not hold",
                                               to_string(step.kind), p.from));
          for_each_index(p.box, [&](const auto& idx) {
            const auto o = static_cast<std::size_t>(offset_in(out.box, idx));
            const Value v = src.data[static_cast<std::size_t>(offset_in(src.box, idx))];
            if (reduce) {
              out.data[o] += v;
              filled[o] = 1;
            } else {
              if (filled[o]) ++ex.duplicate_elements;
              filled[o] = 1;
              out.data[o] = v;
            }
            if (p.from == d) return;
            ++ex.received_elements[static_cast<std::size_t>(d)];
            if (reduce) return;
            const auto g = static_cast<std::size_t>(global_index(shape, idx));
            if (held[static_cast<std::size_t>(d)][g]) ++ex.refetched_elements;
            bool in_target = true;
            const Box& t = target[static_cast<std::size_t>(d)];
            for (std::size_t i = 0; i < idx.size(); ++i)
              in_target = in_target && idx[i] >= t.lo[i] && idx[i] < t.hi[i];
            if (!in_target) ++ex.received_outside_target;
          });
        }
        for (char f : filled)
          if (!f) ++ex.uncovered_elements;
        if (!reduce) held_now += static_cast<std::int64_t>(out.data.size());  // receive buffer
      }
      ex.peak_elements = std::max(ex.peak_elements, held_now);
    }
    shards = std::move(next);
    mark_held(step.out);
  }

  // Compare with the target: each device's block, and its values (summed over the target's
  // pending-sum groups).
  std::vector<int> partial_axes = plan.to.partial;
  for (int d = 0; d < n && ex.mismatch.empty(); ++d) {
    const Shard& s = shards[static_cast<std::size_t>(d)];
    const Box& t = target[static_cast<std::size_t>(d)];
    if (s.box.lo != t.lo || s.box.hi != t.hi) {
      ex.mismatch = fmt::format("device {} holds another block than the target's", d);
      break;
    }
    if (partial_index(mesh, plan.to, d) != 0) continue;
    const std::vector<int> group = group_of(mesh, partial_axes, d);
    for_each_index(t, [&](const auto& idx) {
      if (!ex.mismatch.empty()) return;
      Value sum = 0;
      for (int m : group) {
        const Shard& ms = shards[static_cast<std::size_t>(m)];
        sum += ms.data[static_cast<std::size_t>(offset_in(ms.box, idx))];
      }
      if (sum != global_index(shape, idx))
        ex.mismatch = fmt::format("device {} element {} holds {} (expected {})", d,
                                  global_index(shape, idx), sum, global_index(shape, idx));
    });
  }
  ex.matches_target = ex.mismatch.empty();
  return ex;
}

}  // namespace overlapsim::redistribution
