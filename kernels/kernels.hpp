#pragma once
// Public host API of overlapsim's kernels/ library (C++17, no CUDA kernels in it):
// the multi-GPU harness, the ops, NCCL collectives and the overlap designs.
#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/common/status.hpp"
#include "kernels/designs/decomposed.hpp"
#include "kernels/designs/pair_kernels.hpp"
#include "kernels/designs/pair_op.hpp"
#include "kernels/designs/sequential.hpp"
#include "kernels/harness/comm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/dtype.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/harness/multi_gpu.hpp"
#include "kernels/ops/embedding_bag.hpp"
#include "kernels/ops/gemm_cublaslt.hpp"
