#pragma once
// The two binary trees of NCCL's double binary tree, over positions 0..m-1 (hosts, or
// ranks when each rank is its own host). parent[q] is q's parent, -1 for the root.
#include <vector>

namespace overlapsim::sim::detail {

// Position 0 is the root with one child, the top of an in-order tree over [1, m) whose
// subtree roots are the positions with the most trailing zero bits: every odd position
// is a leaf, and the depth is about log2(m) + 1.
std::vector<int> in_order_tree_parents(int m);

// The second tree relabels positions so that the first tree's leaves become its
// interior: mirror for even m, shift by one for odd m (NCCL's choice too).
std::vector<int> second_tree_parents(const std::vector<int>& first);

}  // namespace overlapsim::sim::detail
