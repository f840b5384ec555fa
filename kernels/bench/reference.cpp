#include "kernels/bench/reference.hpp"

#include <cmath>

#include "kernels/harness/random_values.hpp"

namespace overlapsim::kernels::bench {

std::uint64_t input_seed(std::uint64_t run_seed, int rank, int set, BufferId buffer) {
  return buffer_seed(run_seed, rank, set * 16 + buffer);
}

// Of the output type: fp8 GEMMs write bf16.
double unit_roundoff(DType dtype) { return output_dtype(dtype) == DType::FP16 ? 0x1p-11 : 0x1p-8; }

PairReference::PairReference(PairOp op, const PairShape& shape, DType dtype, int world,
                             std::uint64_t run_seed, int set)
    : op_(op), shape_(shape), dtype_(dtype), world_(world), run_seed_(run_seed), set_(set) {}

std::int64_t PairReference::result_rows() const {
  return op_ == PairOp::GemmReduceScatter ? shape_.m / world_ : shape_.m;
}

PairReference::Terms PairReference::op_terms(int rank, std::int64_t row, std::int64_t col) const {
  Terms t;
  const std::int64_t k = shape_.k;
  if (op_ == PairOp::EmbeddingAllToAll) {
    const std::uint64_t table = input_seed(run_seed_, rank, set_, kBufferA);
    const std::uint64_t indices = input_seed(run_seed_, rank, set_, kBufferIndices);
    for (std::int64_t j = 0; j < k; ++j) {
      const std::int64_t index = random_index(indices, static_cast<std::uint64_t>(row * k + j),
                                              static_cast<std::int32_t>(shape_.table_rows));
      const double v =
          random_value(dtype_, table, static_cast<std::uint64_t>(index * shape_.n + col));
      t.value += v;
      t.rms_sq += v * v;
    }
  } else {
    // allgather+gemm: row `row` of the gathered A is row row - s*M/n of rank s's shard.
    int a_rank = rank;
    std::int64_t a_row = row;
    if (op_ == PairOp::AllGatherGemm) {
      const std::int64_t shard_rows = shape_.m / world_;
      a_rank = static_cast<int>(row / shard_rows);
      a_row = row - a_rank * shard_rows;
    }
    const std::uint64_t a_seed = input_seed(run_seed_, a_rank, set_, kBufferA);
    const std::uint64_t b_seed = input_seed(run_seed_, rank, set_, kBufferB);
    for (std::int64_t kk = 0; kk < k; ++kk) {
      const double a = random_value(dtype_, a_seed, static_cast<std::uint64_t>(a_row * k + kk));
      const double b = random_value(dtype_, b_seed, static_cast<std::uint64_t>(col * k + kk));
      t.value += a * b;
      t.rms_sq += a * b * a * b;
    }
  }
  t.abs_sum = std::fabs(t.value);
  return t;
}

Expected PairReference::finish(const Terms& t) const {
  return {t.value, 4.0 * unit_roundoff(dtype_) * (t.abs_sum + std::sqrt(t.rms_sq))};
}

Expected PairReference::op_output(int rank, std::int64_t row, std::int64_t col) const {
  return finish(op_terms(rank, row, col));
}

Expected PairReference::result(int me, std::int64_t row, std::int64_t col) const {
  const std::int64_t block = shape_.m / world_;
  switch (pair_collective(op_)) {
    case CollectiveOp::AllReduce:
    case CollectiveOp::ReduceScatter: {
      const std::int64_t source_row =
          pair_collective(op_) == CollectiveOp::ReduceScatter ? me * block + row : row;
      Terms sum;
      for (int r = 0; r < world_; ++r) {
        const Terms t = op_terms(r, source_row, col);
        sum.value += t.value;
        sum.abs_sum += t.abs_sum;
        sum.rms_sq += t.rms_sq;
      }
      sum.abs_sum += std::fabs(sum.value);  // the reduction's own rounding
      return finish(sum);
    }
    case CollectiveOp::AllGather:
      return op_output(me, row, col);
    case CollectiveOp::AllToAll: {
      const int source = static_cast<int>(row / block);
      return op_output(source, me * block + (row - source * block), col);
    }
  }
  return {};
}

CollectiveReference::CollectiveReference(CollectiveOp op, std::size_t send_count, DType dtype,
                                         int world, std::uint64_t run_seed, int set)
    : op_(op),
      send_count_(send_count),
      dtype_(dtype),
      world_(world),
      run_seed_(run_seed),
      set_(set) {}

std::size_t CollectiveReference::recv_count() const {
  switch (op_) {
    case CollectiveOp::ReduceScatter:
      return send_count_ / world_;
    case CollectiveOp::AllGather:
      return send_count_ * world_;
    default:
      return send_count_;
  }
}

double CollectiveReference::input(int rank, std::size_t index) const {
  return random_value(dtype_, input_seed(run_seed_, rank, set_, kBufferCollective), index);
}

Expected CollectiveReference::result(int me, std::size_t index) const {
  const double eps = unit_roundoff(dtype_);
  switch (op_) {
    case CollectiveOp::AllReduce:
    case CollectiveOp::ReduceScatter: {
      const std::size_t source =
          op_ == CollectiveOp::ReduceScatter ? me * (send_count_ / world_) + index : index;
      double sum = 0;
      double abs_sum = 0;
      for (int r = 0; r < world_; ++r) {
        const double v = input(r, source);
        sum += v;
        abs_sum += std::fabs(v);
      }
      // One rounding per reduction step at most: (world - 1) * eps * sum of magnitudes.
      return {sum, 2.0 * world_ * eps * abs_sum};
    }
    case CollectiveOp::AllGather: {
      const std::size_t s = index / send_count_;
      return {input(static_cast<int>(s), index - s * send_count_), 0.0};
    }
    case CollectiveOp::AllToAll: {
      const std::size_t per_peer = send_count_ / world_;
      const std::size_t s = index / per_peer;
      return {input(static_cast<int>(s), me * per_peer + (index - s * per_peer)), 0.0};
    }
  }
  return {};
}

std::uint64_t count_outside(const std::vector<double>& measured,
                            const std::vector<Expected>& expected) {
  std::uint64_t outside = 0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const double error = std::fabs(measured[i] - expected[i].value);
    if (!std::isfinite(measured[i]) || !(error <= expected[i].tolerance)) ++outside;
  }
  return outside;
}

}  // namespace overlapsim::kernels::bench
