// Recipes (recipe.hpp) run on host buffers with NCCL's semantics — what the GPU executor
// does with device buffers — must leave every device with its target block, over random
// meshes, shapes and layout pairs (seeded), for both plans. Plus the closed forms: which
// pieces land in place, which are packed, and what a slice costs.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <stdexcept>
#include <string>

#include "redistribution/plan.hpp"
#include "redistribution/recipe.hpp"

namespace overlapsim::redistribution {
namespace {

using Values = std::vector<std::int64_t>;

// Element i of the array is i; under pending sums over the source's partial axes, the
// device whose coordinates along them are c holds addend(c, i), summing over c to i.
struct Data {
  const Mesh* mesh;
  const Shape* shape;
  std::vector<int> partial;  // the source's pending-sum axes

  int combos() const {
    int n = 1;
    for (int a : partial) n *= mesh->axis_sizes[static_cast<std::size_t>(a)];
    return n;
  }
  int combo_of(int device) const {
    const auto c = mesh->coords(device);
    int k = 0;
    for (int a : partial)
      k = k * mesh->axis_sizes[static_cast<std::size_t>(a)] + c[static_cast<std::size_t>(a)];
    return k;
  }
  static std::int64_t small(std::int64_t i, int k) { return (i + 3 * k) % 5; }
  std::int64_t addend(int k, std::int64_t i) const {
    if (k > 0) return small(i, k);
    std::int64_t v = i;
    for (int j = 1; j < combos(); ++j) v -= small(i, j);
    return v;
  }
  // What device `device` holds of element i under a layout with pending sums over `keep`
  // (a subset of the source's): the addends of every combination that agrees with it there.
  std::int64_t value(int device, const std::vector<int>& keep, std::int64_t i) const {
    const auto own = mesh->coords(device);
    std::int64_t v = 0;
    for (int k = 0; k < combos(); ++k) {
      // k's coordinates along `partial`, last axis fastest.
      int rest = k;
      bool agrees = true;
      for (std::size_t j = partial.size(); j-- > 0;) {
        const int a = partial[j];
        const int size = mesh->axis_sizes[static_cast<std::size_t>(a)];
        const int c = rest % size;
        rest /= size;
        if (std::find(keep.begin(), keep.end(), a) != keep.end() && c != own[static_cast<std::size_t>(a)])
          agrees = false;
      }
      if (agrees) v += addend(k, i);
    }
    return v;
  }
};

std::int64_t linear(const Shape& shape, const std::vector<std::int64_t>& idx) {
  std::int64_t l = 0;
  for (std::size_t i = 0; i < shape.size(); ++i) l = l * shape[i] + idx[i];
  return l;
}

// Calls f(global index) over the box, row-major.
template <class F>
void for_each(const Box& box, F f) {
  if (box.empty()) return;
  std::vector<std::int64_t> idx = box.lo;
  while (true) {
    f(idx);
    std::size_t d = idx.size();
    while (d > 0) {
      --d;
      if (++idx[d] < box.hi[d]) break;
      idx[d] = box.lo[d];
      if (d == 0) return;
    }
    if (idx.empty()) return;
  }
}

struct Device {
  Values input, output, staging;
  std::int64_t input_offset = 0, output_offset = 0;
};

std::int64_t* at(Device& d, BufferKind b, std::int64_t offset) {
  switch (b) {
    case BufferKind::Input: return d.input.data() + d.input_offset + offset;
    case BufferKind::Output: return d.output.data() + d.output_offset + offset;
    case BufferKind::Staging: return d.staging.data() + offset;
  }
  return nullptr;
}

void copy(Device& d, const BoxCopy& c) {
  for_each(c.box, [&](const std::vector<std::int64_t>& idx) {
    Box one{idx, idx};
    for (auto& h : one.hi) ++h;
    *at(d, c.dst.buffer, c.dst.offset + offset_within(one, c.dst.frame)) =
        *at(d, c.src.buffer, c.src.offset + offset_within(one, c.src.frame));
  });
}

// A broken invariant of the simulated NCCL calls (the test fails on the exception).
void require(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("recipe mismatch: ") + what);
}

// Runs the plan's recipes; returns each device's final block.
std::vector<Values> run(const Plan& plan, const Data& data) {
  const int n = plan.mesh.num_devices();
  std::vector<Device> dev(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d) {
    const Box b = block_of(plan.mesh, plan.shape, plan.from, d);
    auto& v = dev[static_cast<std::size_t>(d)].output;
    for_each(b, [&](const auto& idx) {
      v.push_back(data.value(d, plan.from.partial, linear(plan.shape, idx)));
    });
  }
  for (const Step& s : plan.steps) {
    const std::vector<StepRecipe> rs = recipes(plan, s);
    for (int d = 0; d < n; ++d) {
      Device& x = dev[static_cast<std::size_t>(d)];
      const StepRecipe& r = rs[static_cast<std::size_t>(d)];
      x.input = std::move(x.output);
      x.input_offset = x.output_offset;
      x.output_offset = 0;
      if (r.output_view_offset) {
        x.output = x.input;
        x.output_offset = x.input_offset + *r.output_view_offset;
      } else {
        x.output.assign(static_cast<std::size_t>(r.output_elements), -999999);
      }
      x.staging.assign(static_cast<std::size_t>(r.staging_elements), -777777);
      for (const BoxCopy& c : r.before) copy(x, c);
    }
    // The calls, with NCCL's semantics.
    const auto span_at = [&](int d, const Span& sp) {
      return at(dev[static_cast<std::size_t>(d)], sp.buffer, sp.offset);
    };
    std::vector<Values> results(static_cast<std::size_t>(n));
    for (int d = 0; d < n; ++d) {
      const StepRecipe& r = rs[static_cast<std::size_t>(d)];
      const auto members = static_cast<std::int64_t>(r.group.size());
      const auto pos = std::find(r.group.begin(), r.group.end(), d) - r.group.begin();
      auto& out = results[static_cast<std::size_t>(d)];
      switch (r.call) {
        case CallKind::None: break;
        case CallKind::AllReduce:
          out.assign(static_cast<std::size_t>(r.recv.count), 0);
          for (int m : r.group) {
            const StepRecipe& rm = rs[static_cast<std::size_t>(m)];
            require((rm.send.count) == (r.recv.count), "rm.send.count == r.recv.count");
            for (std::int64_t i = 0; i < r.recv.count; ++i) out[static_cast<std::size_t>(i)] += span_at(m, rm.send)[i];
          }
          break;
        case CallKind::ReduceScatter:
          out.assign(static_cast<std::size_t>(r.recv.count), 0);
          for (int m : r.group) {
            const StepRecipe& rm = rs[static_cast<std::size_t>(m)];
            require((rm.send.count) == (members * r.recv.count), "rm.send.count == members * r.recv.count");
            for (std::int64_t i = 0; i < r.recv.count; ++i)
              out[static_cast<std::size_t>(i)] += span_at(m, rm.send)[pos * r.recv.count + i];
          }
          break;
        case CallKind::AllGather:
          require((r.recv.count) == (members * r.send.count), "r.recv.count == members * r.send.count");
          for (int m : r.group) {
            const StepRecipe& rm = rs[static_cast<std::size_t>(m)];
            require((rm.send.count) == (r.send.count), "rm.send.count == r.send.count");
            out.insert(out.end(), span_at(m, rm.send), span_at(m, rm.send) + rm.send.count);
          }
          break;
        case CallKind::SendRecv: break;
      }
    }
    // Send/recv: the k-th send from a to b fills b's k-th receive from a.
    std::map<std::pair<int, int>, std::vector<Span>> sent;
    for (int d = 0; d < n; ++d)
      for (const PeerSpan& p : rs[static_cast<std::size_t>(d)].sends) sent[{d, p.peer}].push_back(p.span);
    std::map<std::pair<int, int>, std::size_t> taken;
    for (int d = 0; d < n; ++d) {
      const StepRecipe& r = rs[static_cast<std::size_t>(d)];
      if (r.call == CallKind::AllReduce || r.call == CallKind::ReduceScatter ||
          r.call == CallKind::AllGather)
        std::copy(results[static_cast<std::size_t>(d)].begin(),
                  results[static_cast<std::size_t>(d)].end(), span_at(d, r.recv));
      for (const PeerSpan& p : r.recvs) {
        auto& k = taken[{p.peer, d}];
        const auto& from = sent[{p.peer, d}];
        require(k < from.size(), "a receive with no matching send");
        const Span& src = from[k++];
        require((src.count) == (p.span.count), "src.count == p.span.count");
        std::copy(span_at(p.peer, src), span_at(p.peer, src) + src.count, span_at(d, p.span));
      }
    }
    for (const auto& [key, spans] : sent) EXPECT_EQ(taken[key], spans.size()) << "a send nobody received";
    for (int d = 0; d < n; ++d)
      for (const BoxCopy& c : rs[static_cast<std::size_t>(d)].after) copy(dev[static_cast<std::size_t>(d)], c);
  }
  std::vector<Values> out;
  for (int d = 0; d < n; ++d) {
    Device& x = dev[static_cast<std::size_t>(d)];
    const std::int64_t count = local_elements(plan.mesh, plan.shape, plan.to);
    out.emplace_back(at(x, BufferKind::Output, 0), at(x, BufferKind::Output, 0) + count);
  }
  return out;
}

void expect_target(const Plan& plan, const std::string& what) {
  Data data{&plan.mesh, &plan.shape, plan.from.partial};
  const std::vector<Values> got = run(plan, data);
  for (int d = 0; d < plan.mesh.num_devices(); ++d) {
    Values want;
    for_each(block_of(plan.mesh, plan.shape, plan.to, d), [&](const auto& idx) {
      want.push_back(data.value(d, plan.to.partial, linear(plan.shape, idx)));
    });
    ASSERT_EQ(got[static_cast<std::size_t>(d)], want) << what << " device " << d;
  }
}

TEST(Recipe, ContiguityAndOffsets) {
  const Box frame{{0, 0, 0}, {4, 6, 8}};
  EXPECT_TRUE(contiguous_within(frame, frame));
  EXPECT_TRUE(contiguous_within(Box{{1, 0, 0}, {3, 6, 8}}, frame));   // whole rows
  EXPECT_TRUE(contiguous_within(Box{{2, 1, 0}, {3, 4, 8}}, frame));   // one plane, rows 1..3
  EXPECT_TRUE(contiguous_within(Box{{2, 5, 3}, {3, 6, 7}}, frame));   // part of one row
  EXPECT_FALSE(contiguous_within(Box{{0, 0, 0}, {4, 6, 4}}, frame));  // half of every row
  EXPECT_FALSE(contiguous_within(Box{{1, 1, 0}, {3, 4, 8}}, frame));  // rows of two planes
  EXPECT_EQ(offset_within(Box{{2, 1, 3}, {3, 4, 8}}, frame), (2 * 6 + 1) * 8 + 3);
}

TEST(Recipe, RowsToColumnsPacksWhatItSendsAndReceivesInPlace) {
  const Mesh mesh = parse_mesh("x=4", "--mesh");
  const Shape shape{64, 32};
  const Plan p = synthesize(mesh, shape, 2, parse_layout("P('x', None)", mesh, shape, "--from"),
                            parse_layout("P(None, 'x')", mesh, shape, "--to"));
  ASSERT_EQ(p.steps.size(), 1u);
  const StepRecipe r = recipe(p, p.steps[0], 1);
  EXPECT_EQ(r.call, CallKind::SendRecv);
  // Four packed 16 x 8 pieces (its own included: it goes through NCCL, as in nccl-tests'
  // all-to-all), all before the exchange; nothing after.
  ASSERT_EQ(r.before.size(), 4u);
  EXPECT_EQ(copied_elements(r.before), 4 * 16 * 8);
  EXPECT_TRUE(r.after.empty());
  EXPECT_EQ(r.staging_elements, 4 * 16 * 8);
  ASSERT_EQ(r.sends.size(), 4u);
  ASSERT_EQ(r.recvs.size(), 4u);
  for (const PeerSpan& s : r.recvs) {
    EXPECT_EQ(s.span.buffer, BufferKind::Output);
    EXPECT_EQ(s.span.offset, s.peer * 16 * 8);  // rows of device s.peer, in place
  }
  expect_target(p, "rows to columns");
}

TEST(Recipe, SlicesAreViewsWhenContiguous) {
  const Mesh mesh = parse_mesh("x=2", "--mesh");
  const Shape shape{8, 8};
  const Layout r = parse_layout("P()", mesh, shape, "--from");
  const Plan rows = synthesize(mesh, shape, 2, r, parse_layout("P('x', None)", mesh, shape, "--to"));
  ASSERT_EQ(rows.steps.size(), 1u);
  const StepRecipe v = recipe(rows, rows.steps[0], 1);
  ASSERT_TRUE(v.output_view_offset.has_value());
  EXPECT_EQ(*v.output_view_offset, 32);
  EXPECT_TRUE(v.before.empty());
  const Plan cols = synthesize(mesh, shape, 2, r, parse_layout("P(None, 'x')", mesh, shape, "--to"));
  const StepRecipe c = recipe(cols, cols.steps[0], 1);
  EXPECT_FALSE(c.output_view_offset.has_value());
  EXPECT_EQ(copied_elements(c.before), 32);
  expect_target(rows, "row slice");
  expect_target(cols, "column slice");
}

TEST(Recipe, GatheringColumnsUnpacksAndReduceScatteringColumnsPacks) {
  const Mesh mesh = parse_mesh("x=2", "--mesh");
  const Shape shape{4, 8};
  const Plan ag = synthesize(mesh, shape, 2, parse_layout("P(None, 'x')", mesh, shape, "--from"),
                             parse_layout("P()", mesh, shape, "--to"));
  ASSERT_EQ(ag.steps.size(), 1u);
  const StepRecipe g = recipe(ag, ag.steps[0], 0);
  EXPECT_EQ(g.call, CallKind::AllGather);
  EXPECT_EQ(g.recv.buffer, BufferKind::Staging);
  EXPECT_EQ(copied_elements(g.after), 32);
  expect_target(ag, "column gather");
  const Plan rs = synthesize(mesh, shape, 2, parse_layout("[Partial()]", mesh, shape, "--from"),
                             parse_layout("P(None, 'x')", mesh, shape, "--to"));
  const StepRecipe s = recipe(rs, rs.steps[0], 0);
  EXPECT_EQ(s.call, CallKind::ReduceScatter);
  EXPECT_EQ(s.send.buffer, BufferKind::Staging);
  EXPECT_EQ(copied_elements(s.before), 32);
  expect_target(rs, "column reduce-scatter");
  const Plan rows = synthesize(mesh, shape, 2, parse_layout("[Partial()]", mesh, shape, "--from"),
                               parse_layout("P('x', None)", mesh, shape, "--to"));
  const StepRecipe in_place = recipe(rows, rows.steps[0], 0);
  EXPECT_EQ(in_place.send.buffer, BufferKind::Input);
  EXPECT_TRUE(in_place.before.empty());
  expect_target(rows, "row reduce-scatter");
}

// Random layout: each axis splits a random dimension at a random place, holds a pending sum
// (source only, where allowed), or replicates.
Layout draw_layout(std::mt19937_64& rng, const Mesh& mesh, std::size_t rank,
                   const std::vector<int>& partial_from, bool source) {
  Layout l;
  l.dims.resize(rank);
  for (int a = 0; a < mesh.num_axes(); ++a) {
    const int r = std::uniform_int_distribution<int>(0, 9)(rng);
    const bool may_sum = source || std::find(partial_from.begin(), partial_from.end(), a) !=
                                       partial_from.end();
    if (may_sum && r < 2) {
      l.partial.push_back(a);
    } else if (r < 8) {
      auto& d = l.dims[std::uniform_int_distribution<std::size_t>(0, rank - 1)(rng)];
      d.insert(d.begin() + static_cast<std::ptrdiff_t>(
                               std::uniform_int_distribution<std::size_t>(0, d.size())(rng)),
               a);
    }
  }
  return l;
}

TEST(Recipe, RandomPlansReachTheirTargets) {
  std::mt19937_64 rng(20261126);
  static constexpr int kSizes[] = {1, 2, 2, 3, 4};
  int cases = 0;
  while (cases < 400) {
    Mesh mesh;
    const int axes = std::uniform_int_distribution<int>(1, 3)(rng);
    int devices = 1;
    for (int a = 0; a < axes; ++a) {
      mesh.axis_names.push_back(std::string(1, static_cast<char>('a' + a)));
      mesh.axis_sizes.push_back(kSizes[std::uniform_int_distribution<int>(0, 4)(rng)]);
      devices *= mesh.axis_sizes.back();
    }
    if (devices > 12) continue;
    const auto rank = std::uniform_int_distribution<std::size_t>(1, 3)(rng);
    Shape shape;
    for (std::size_t i = 0; i < rank; ++i)
      shape.push_back(devices * std::uniform_int_distribution<int>(1, 2)(rng));
    const Layout from = draw_layout(rng, mesh, rank, {}, true);
    const Layout to = draw_layout(rng, mesh, rank, from.partial, false);
    const std::string what = mesh.to_string() + " " + to_string(from, mesh) + " -> " + to_string(to, mesh);
    expect_target(synthesize(mesh, shape, 2, from, to), "synthesised " + what);
    expect_target(naive_plan(mesh, shape, 2, from, to), "naive " + what);
    ++cases;
  }
}

}  // namespace
}  // namespace overlapsim::redistribution
