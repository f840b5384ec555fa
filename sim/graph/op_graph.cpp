#include "sim/graph/op_graph.hpp"

namespace overlapsim::sim {

const char* to_string(OpKind kind) {
  switch (kind) {
    case OpKind::Gemm: return "gemm";
    case OpKind::Gemv: return "gemv";
    case OpKind::Attention: return "attention";
    case OpKind::Elementwise: return "elementwise";
    case OpKind::EmbeddingLookup: return "embedding";
    case OpKind::Collective: return "collective";
    case OpKind::SendRecv: return "sendrecv";
  }
  return "?";
}

const char* to_string(Precision p) {
  switch (p) {
    case Precision::FP32: return "fp32";
    case Precision::BF16: return "bf16";
    case Precision::FP16: return "fp16";
    case Precision::FP8: return "fp8";
  }
  return "?";
}

int bytes_per_element(Precision p) {
  switch (p) {
    case Precision::FP32: return 4;
    case Precision::BF16:
    case Precision::FP16: return 2;
    case Precision::FP8: return 1;
  }
  return 2;
}

const char* to_string(Phase p) {
  switch (p) {
    case Phase::Forward: return "fwd";
    case Phase::Backward: return "bwd";
    case Phase::Optimizer: return "opt";
  }
  return "?";
}

const char* to_string(StreamKind s) {
  switch (s) {
    case StreamKind::Compute: return "compute";
    case StreamKind::TensorComm: return "tp-comm";
    case StreamKind::DataComm: return "dp-comm";
    case StreamKind::PipelineComm: return "pp-comm";
    case StreamKind::ExpertComm: return "ep-comm";
    case StreamKind::ContextComm: return "cp-comm";
    case StreamKind::ExpertNodeComm:
      return "ep-node-comm";
  }
  return "?";
}

}  // namespace overlapsim::sim
