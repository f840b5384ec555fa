#pragma once
// The class of a (compute op, collective) pair: what repeats in every layer and microbatch,
// so a tuner can choose a design per class and a report can name it, e.g.
// "tp allreduce after fwd.fc2", "tp allgather before fwd.qkv", "ep alltoall before
// fwd.expert_fc1". The op's name loses its layer and microbatch ("L3.mb2.fwd.fc2" ->
// "fwd.fc2"); the collective's communicator family, its kind and the pair's direction
// (after: the op produces the collective's input; before: it consumes its output) stay.
#include <string>

#include "sim/graph/op_graph.hpp"

namespace overlapsim::sim {

// `compute` must be a compute op of program `program` paired with a collective.
std::string pair_class(const StepGraph& step, int program, OpVertex compute);

// "L3.mb2.fwd.fc2" -> "fwd.fc2": dot-separated fields L<n>, mb<n>, chunk<n> and bare numbers
// dropped.
std::string op_base_name(const std::string& name);

}  // namespace overlapsim::sim
