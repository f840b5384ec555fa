// synthesize() and naive_plan() (plan.hpp); why the normal form keeps its bounds is in
// docs/redistribution.md.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "config/error.hpp"
#include "redistribution/plan.hpp"

namespace overlapsim::redistribution {
namespace {

// Axes of size 1 change no block: drop them so that no step is spent on them.
Layout without_unit_axes(const Mesh& mesh, Layout l) {
  auto unit = [&](int a) { return mesh.axis_sizes[static_cast<std::size_t>(a)] == 1; };
  for (auto& d : l.dims) d.erase(std::remove_if(d.begin(), d.end(), unit), d.end());
  l.partial.erase(std::remove_if(l.partial.begin(), l.partial.end(), unit), l.partial.end());
  return l;
}

void remove_partial(Layout& l, int axis) {
  l.partial.erase(std::remove(l.partial.begin(), l.partial.end(), axis), l.partial.end());
}

// Appends `axis` to dimension `preferred` of `l` where the split stays even, else to the
// first dimension where it does; false when no dimension can take it.
bool append_axis(const Mesh& mesh, const Shape& shape, Layout& l, int axis, std::size_t preferred) {
  const std::int64_t n = mesh.axis_sizes[static_cast<std::size_t>(axis)];
  auto fits = [&](std::size_t j) { return shape[j] % (split_factor(mesh, l, j) * n) == 0; };
  std::optional<std::size_t> dim;
  if (preferred < shape.size() && fits(preferred)) {
    dim = preferred;
  } else {
    for (std::size_t j = 0; j < shape.size() && !dim; ++j)
      if (fits(j)) dim = j;
  }
  if (!dim) return false;
  l.dims[*dim].push_back(axis);
  return true;
}


// Elements the devices keep when going from `cur` to `next` (the overlap of their blocks).
std::int64_t kept_elements(const Mesh& mesh, const Shape& shape, const Layout& cur,
                           const Layout& next) {
  std::int64_t kept = 0;
  for (int d = 0; d < mesh.num_devices(); ++d)
    kept += intersect(block_of(mesh, shape, cur, d), block_of(mesh, shape, next, d)).elements();
  return kept;
}

// `dst` with each of `gathered` appended to some dimension (in their order within each
// dimension), the split staying even: of every such placement the one that keeps the most
// elements from `cur` (ties: the first, which prefers lower dimensions). An axis that fits
// no dimension is left out (the exchange then gathers it itself).
Layout best_pre_gather(const Mesh& mesh, const Shape& shape, const Layout& cur,
                       const Layout& dst, const std::vector<int>& gathered) {
  Layout best = dst;
  std::int64_t best_kept = -1;
  const std::size_t dims = shape.size();
  std::size_t combos = 1;
  for (std::size_t k = 0; k < gathered.size() && combos <= 4096; ++k) combos *= dims + 1;
  for (std::size_t code = 0; code < combos; ++code) {
    Layout l = dst;
    std::size_t rest = code;
    bool ok = true;
    std::size_t placed = 0;
    for (int a : gathered) {
      const std::size_t j = rest % (dims + 1);  // dims: left out
      rest /= dims + 1;
      if (j == dims) continue;
      const std::int64_t n = mesh.axis_sizes[static_cast<std::size_t>(a)];
      if (shape[j] % (split_factor(mesh, l, j) * n) != 0) {
        ok = false;
        break;
      }
      l.dims[j].push_back(a);
      ++placed;
    }
    if (!ok) continue;
    // Placing more axes keeps the exchange's output (and its buffer) smaller: prefer it.
    const std::int64_t kept = kept_elements(mesh, shape, cur, l) * 64 + static_cast<std::int64_t>(placed);
    if (kept > best_kept) {
      best_kept = kept;
      best = std::move(l);
    }
  }
  return best;
}

Plan empty_plan(const char* name, const Mesh& mesh, const Shape& shape, int element_bytes,
                const Layout& from, const Layout& to) {
  for (int a : to.partial)
    if (!from.is_partial(a))
      throw config::ConfigError(fmt::format(
          "--to: a pending sum over axis '{}' that the source does not hold (expected the "
          "target's Partial axes to be Partial in the source: creating pending sums is not "
          "supported)",
          mesh.axis_names[static_cast<std::size_t>(a)]));
  Plan p;
  p.name = name;
  p.mesh = mesh;
  p.shape = shape;
  p.element_bytes = element_bytes;
  p.from = from;
  p.to = to;
  return p;
}

}  // namespace

Plan synthesize(const Mesh& mesh, const Shape& shape, int element_bytes, const Layout& from,
                const Layout& to) {
  Plan plan = empty_plan("synthesised", mesh, shape, element_bytes, from, to);
  const Layout src = without_unit_axes(mesh, from);
  const Layout dst = without_unit_axes(mesh, to);
  auto push = [&](StepKind kind, std::vector<int> axes, const Layout& in, const Layout& out) {
    plan.steps.push_back(make_step(mesh, shape, kind, std::move(axes), in, out));
  };

  // 1. Slices: axes the target splits and the source replicates, taken locally where they
  //    extend a dimension's axes towards the target's (the current axes of that dimension
  //    a prefix of the target's), so the slice keeps every element of the target block.
  Layout cur = src;
  for (std::size_t j = 0; j < dst.dims.size(); ++j) {
    auto& c = cur.dims[j];
    const auto& t = dst.dims[j];
    while (c.size() < t.size() && std::equal(c.begin(), c.end(), t.begin()) &&
           !src.splits(t[c.size()]) && !src.is_partial(t[c.size()]))
      c.push_back(t[c.size()]);
  }
  if (!(cur == src)) push(StepKind::Slice, {}, src, cur);

  // 2. Pending sums the target splits by: reduce-scatter into that dimension.
  std::vector<int> reduce_all;  // pending sums the target neither splits by nor keeps
  {
    Layout next = cur;
    std::vector<int> scatter;
    for (std::size_t j = 0; j < dst.dims.size(); ++j)
      for (int a : dst.dims[j])
        if (src.is_partial(a)) {
          if (append_axis(mesh, shape, next, a, j)) {
            scatter.push_back(a);
            remove_partial(next, a);
          } else {
            reduce_all.push_back(a);
          }
        }
    if (!scatter.empty()) {
      std::sort(scatter.begin(), scatter.end());
      push(StepKind::ReduceScatter, scatter, cur, next);
      cur = next;
    }
  }
  // 3. The other pending sums the target does not keep: all-reduce, at the smallest size.
  for (int a : src.partial)
    if (!dst.splits(a) && !dst.is_partial(a)) reduce_all.push_back(a);
  if (!reduce_all.empty()) {
    std::sort(reduce_all.begin(), reduce_all.end());
    Layout next = cur;
    for (int a : reduce_all) remove_partial(next, a);
    push(StepKind::AllReduce, reduce_all, cur, next);
    cur = next;
  }

  // 4. The layout before the gathers: the target with the axes it does not split (and cur
  //    does) appended, each to a dimension where the split stays even; of those placements,
  //    the one where the devices keep the most of what they hold (ideally all of their
  //    target block they hold, so nothing dropped comes back in the gather).
  std::vector<int> gathered;
  for (const auto& d : cur.dims)
    for (int a : d)
      if (!dst.splits(a)) gathered.push_back(a);
  const Layout pre_gather = best_pre_gather(mesh, shape, cur, dst, gathered);
  for (std::size_t k = gathered.size(); k-- > 0;)
    if (!pre_gather.splits(gathered[k])) gathered.erase(gathered.begin() + static_cast<std::ptrdiff_t>(k));

  // 5. One exchange from cur to pre_gather over the axes past each dimension's common
  //    prefix: the devices of a group together hold exactly the prefix blocks they need.
  if (!(cur == pre_gather)) {
    std::vector<int> axes;
    for (std::size_t j = 0; j < cur.dims.size(); ++j) {
      const auto& a = cur.dims[j];
      const auto& b = pre_gather.dims[j];
      std::size_t k = 0;
      while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
      axes.insert(axes.end(), a.begin() + static_cast<std::ptrdiff_t>(k), a.end());
      axes.insert(axes.end(), b.begin() + static_cast<std::ptrdiff_t>(k), b.end());
    }
    // Only the axes that split cur form groups: along the others every device already holds
    // the same data as its neighbours, so it takes its pieces from devices at its own
    // coordinate there.
    std::sort(axes.begin(), axes.end());
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
    axes.erase(std::remove_if(axes.begin(), axes.end(), [&](int a) { return !cur.splits(a); }),
               axes.end());
    push(StepKind::AllToAllV, axes, cur, pre_gather);
  }
  // 6. The gathers, all in one all-gather over the appended axes.
  if (!gathered.empty()) {
    std::sort(gathered.begin(), gathered.end());
    push(StepKind::AllGather, gathered, pre_gather, dst);
  }
  return plan;
}

Plan naive_plan(const Mesh& mesh, const Shape& shape, int element_bytes, const Layout& from,
                const Layout& to) {
  Plan plan = empty_plan("naive", mesh, shape, element_bytes, from, to);
  const Layout src = without_unit_axes(mesh, from);
  const Layout dst = without_unit_axes(mesh, to);
  Layout cur = src;
  std::vector<int> reduce;
  for (int a : src.partial)
    if (!dst.is_partial(a)) reduce.push_back(a);
  if (!reduce.empty()) {
    Layout next = cur;
    for (int a : reduce) remove_partial(next, a);
    plan.steps.push_back(make_step(mesh, shape, StepKind::AllReduce, reduce, cur, next));
    cur = next;
  }
  // Gather every axis that does not keep its place (a dimension's leading axes the source
  // and target share, such as a data-parallel batch axis, stay split).
  Layout whole = cur;
  std::vector<int> gather;
  for (std::size_t j = 0; j < cur.dims.size(); ++j) {
    const auto& a = cur.dims[j];
    const auto& b = dst.dims[j];
    std::size_t k = 0;
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    gather.insert(gather.end(), a.begin() + static_cast<std::ptrdiff_t>(k), a.end());
    whole.dims[j].resize(k);
  }
  if (!gather.empty()) {
    std::sort(gather.begin(), gather.end());
    plan.steps.push_back(make_step(mesh, shape, StepKind::AllGather, gather, cur, whole));
    cur = whole;
  }
  if (!(cur == dst)) plan.steps.push_back(make_step(mesh, shape, StepKind::Slice, {}, cur, dst));
  return plan;
}

}  // namespace overlapsim::redistribution
