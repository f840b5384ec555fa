#pragma once
// Runs a plan on real data over virtual devices, to check it: every device starts with its
// block of the source layout (element i of the global array holds i, its linear index; where
// the source holds pending sums, the devices of a pending-sum group hold addends that sum to
// i), every step moves the elements its pieces name (step.hpp incoming()) from the sender's
// current block, and the result is compared with the target layout's blocks. It counts what
// moved and what was held, independently of the plan's own counts.
#include <cstdint>
#include <string>
#include <vector>

#include "redistribution/plan.hpp"

namespace overlapsim::redistribution {

struct Execution {
  bool matches_target = false;
  std::string mismatch;  // the first difference, in words; empty when it matches
  // Per device, elements received from other devices over all steps.
  std::vector<std::int64_t> received_elements;
  // Per device, the most elements held at once (input plus the buffer a step allocates).
  std::int64_t peak_elements = 0;
  // Elements of a step's output block that no piece or more than one piece filled.
  std::int64_t uncovered_elements = 0, duplicate_elements = 0;
  // Elements a device received that it had already held in final form earlier in the plan
  // (reductions excluded), and elements received outside the device's target block.
  std::int64_t refetched_elements = 0, received_outside_target = 0;
};

// Throws std::logic_error when a step names data its sender does not hold.
Execution execute(const Plan& plan);

}  // namespace overlapsim::redistribution
