#pragma once
// The per-chunk vendor family of GEMM+ReduceScatter (kernels/tilewise/vendor_reduce_scatter.hpp)
// in the tile-wise runner (tilewise_runner.hpp): one candidate per --tilewise-vendor-chunks
// count, each timed as the copy-engine search times its candidates (tilewise_tuner.hpp: a
// loop of its own, half the case's warm-up and iterations), its median into the detail line
// "overlap-bench: rs_vendor_candidate"; the fastest is the family's best. The runner puts
// it beside the copy-engine choice and the sequential pair in the final loop (row
// tilewise_rs_vendor, chunks = chunks a block) and the tuner picks among the three.
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/bench/tilewise_context.hpp"
#include "kernels/tilewise/vendor_reduce_scatter.hpp"

namespace overlapsim::kernels::bench {

class VendorReduceScatterFamily {
 public:
  explicit VendorReduceScatterFamily(TilewiseShapeContext& sc) : sc_(sc) {}

  static constexpr const char* kDesign = "tilewise_rs_vendor";

  // Times every candidate the shape allows; keeps the fastest's design. Nothing for other
  // pairs or with no vendor chunk counts.
  Status search();
  bool found() const { return design_ != nullptr; }
  double search_s() const { return search_s_; }
  int chunks() const { return chunks_; }
  // The best candidate on input set i, its result in the runner's scratch R.
  Status run(int i);
  // Input set 0 behind poisoned outputs against the reference and the sequential pair
  // (bf16 tolerance: the sum rounds once where NCCL rounds each hop).
  Status check(std::uint64_t* wrong);

 private:
  TilewiseShapeContext& sc_;
  std::unique_ptr<tw::VendorReduceScatterDesign> design_;
  double search_s_ = 0;
  int chunks_ = 0;
};

}  // namespace overlapsim::kernels::bench
