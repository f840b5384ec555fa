#include "workloads/validation_caveats.hpp"

namespace overlapsim::workloads {

std::vector<ValidationCaveat> validation_caveats(const ModelSpec& model) {
  std::vector<ValidationCaveat> out;
  if (model.kind == ModelKind::Moe)
    out.push_back(
        {"moe layers",
         "not validated: published MoE runs take 1.2 to 1.8 times the simulated step (1.36 "
         "on Megatron-Bridge's current 16 x H100 BF16 Qwen3-30B-A3B recipe; 1.7 to 1.8 on the "
         "performance summary's GPT-OSS 120B and Qwen3-30B-A3B rows), their MoE layers' "
         "unfused passes not charged at their measured rates, and the host (its launches, the "
         "dispatcher's wait for the token counts) only where the model sets "
         "training.host_launch_time (docs/validation.md, \"MoE runs\")"});
  if (model.kind == ModelKind::Dlrm && model.dlrm.embedding_ops == EmbeddingOps::TensorFlow)
    out.push_back({"framework host work",
                   "not modelled: the published DCNv2 TensorFlow run takes about 1.5 times the "
                   "simulated step, the gap most likely TensorFlow's and Horovod's host-side "
                   "work (docs/validation.md, DCNv2)"});
  return out;
}

}  // namespace overlapsim::workloads
