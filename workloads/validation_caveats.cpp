#include "workloads/validation_caveats.hpp"

namespace overlapsim::workloads {

std::vector<ValidationCaveat> validation_caveats(const ModelSpec& model) {
  std::vector<ValidationCaveat> out;
  if (model.kind == ModelKind::Moe)
    out.push_back(
        {"moe layers",
         "not validated: published MoE runs take about 1.9 times the simulated step "
         "(GPT-OSS 120B; Qwen3-30B-A3B in two layouts), their MoE layers' unfused passes and "
         "host synchronisation not modelled; the one that agrees (Qwen3 235B) does so because "
         "an all-to-all it overlaps is charged exposed (docs/validation.md, \"MoE runs\")"});
  if (model.kind == ModelKind::Dlrm && model.dlrm.embedding_ops == EmbeddingOps::TensorFlow)
    out.push_back({"framework host work",
                   "not modelled: the published DCNv2 TensorFlow run takes about 1.5 times the "
                   "simulated step, the gap most likely TensorFlow's and Horovod's host-side "
                   "work (docs/validation.md, DCNv2)"});
  return out;
}

}  // namespace overlapsim::workloads
