#include "sim/exec/overlap_design.hpp"

namespace overlapsim::sim {

void SequentialDesign::start(ExecContext& ctx, int program, OpVertex v) {
  const OpKind kind = ctx.op_kind(program, v);
  if (kind == OpKind::Collective || kind == OpKind::SendRecv) {
    ctx.run_comm(program, v);
  } else {
    ctx.run_for(program, v, ctx.op_time_s(program, v));
  }
}

}  // namespace overlapsim::sim
