#include "kernels/tilewise/vendor_row_gemms.hpp"

#include <string>
#include <utility>

#include "kernels/tilewise/design_support.hpp"

namespace overlapsim::kernels::tilewise {
namespace {
// What overlap-bench's sequential pair gives cuBLASLt (bench_env.cpp), so the heuristic
// offers the chunks the same algorithms.
constexpr std::size_t kWorkspaceBytes = std::size_t{64} << 20;
}  // namespace

VendorRowGemms::~VendorRowGemms() {
  plans_.clear();  // the plans before the handle they were made with
  if (handle_) cublasLtDestroy(handle_);
}

Status VendorRowGemms::initialize(std::int64_t n, std::int64_t k, DType dtype,
                                  const std::vector<std::int64_t>& row_counts,
                                  std::int64_t row_unit) {
  if (handle_) return Status::failure("vendor row GEMMs: initialize() called twice");
  if (dtype != DType::BF16 && dtype != DType::FP16)
    return Status::failure("vendor row GEMMs: bf16 or fp16 only");
  n_ = n;
  k_ = k;
  alignment_ = common_alignment({static_cast<std::uint64_t>(row_unit * k) * kElementBytes,
                                 static_cast<std::uint64_t>(row_unit * n) * kElementBytes});
  CUBLAS_CHECK(cublasLtCreate(&handle_));
  OVERLAPSIM_TRY(workspace_.allocate(kWorkspaceBytes));
  for (const std::int64_t rows : row_counts) {
    if (plans_.count(rows)) continue;
    CublasLtGemm g;
    OVERLAPSIM_TRY(g.initialize(handle_, GemmShape{rows, n, k}, dtype, GemmBatching{}, alignment_,
                                workspace_.data(), kWorkspaceBytes));
    plans_.emplace(rows, std::move(g));
  }
  return Status::success();
}

Status VendorRowGemms::run(std::int64_t rows, std::int64_t row, const void* a, const void* b,
                           void* c, cudaStream_t stream) const {
  return run_at(rows,
                static_cast<const char*>(a) + static_cast<std::size_t>(row * k_) * kElementBytes, b,
                static_cast<char*>(c) + static_cast<std::size_t>(row * n_) * kElementBytes, stream);
}

Status VendorRowGemms::run_at(std::int64_t rows, const void* a_rows, const void* b, void* c_rows,
                              cudaStream_t stream) const {
  const auto found = plans_.find(rows);
  if (found == plans_.end())
    return Status::failure("vendor row GEMMs: no plan for " + std::to_string(rows) + " rows");
  for (const void* p : {a_rows, b, static_cast<const void*>(c_rows)})
    if (reinterpret_cast<std::uintptr_t>(p) % alignment_ != 0)
      return Status::failure("vendor row GEMMs: a pointer is less aligned than the " +
                             std::to_string(alignment_) + " bytes the plans were made for");
  return found->second.run(a_rows, b, c_rows, stream);
}

}  // namespace overlapsim::kernels::tilewise
