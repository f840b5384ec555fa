#include "sim/exec/overlap_design.hpp"

namespace overlapsim::sim {

void SequentialDesign::start(ExecContext& ctx, int program, OpVertex v) {
  const OpNode& node = ctx.op(program, v);
  if (node.kind == OpKind::Collective || node.kind == OpKind::SendRecv) {
    ctx.run_comm(program, v);
  } else {
    ctx.run_for(program, v, ctx.compute_model().time_s(node));
  }
}

}  // namespace overlapsim::sim
