#pragma once
// Helpers for the generator tests: load a shipped model, walk a rank's ops.
#include <functional>
#include <string>

#include "sim/graph/op_graph.hpp"
#include "workloads/model.hpp"

namespace overlapsim::workloads::testing {

inline ModelSpec shipped(const std::string& name) {
  return load_model(std::string(OVERLAPSIM_SOURCE_DIR) + "/workloads/models/" + name + ".yaml");
}

inline void for_each_op(const sim::RankProgram& p,
                        const std::function<void(sim::OpVertex, const sim::OpNode&)>& f) {
  for (auto v : boost::make_iterator_range(boost::vertices(p.graph))) f(v, p.graph[v]);
}

// Sum of `value(op)` over the ops of one rank that satisfy `pred`.
inline double sum_ops(const sim::RankProgram& p,
                      const std::function<bool(const sim::OpNode&)>& pred,
                      const std::function<double(const sim::OpNode&)>& value) {
  double total = 0;
  for_each_op(p, [&](sim::OpVertex, const sim::OpNode& op) {
    if (pred(op)) total += value(op);
  });
  return total;
}

inline const std::string& family_of(const sim::StepGraph& step, const sim::OpNode& op) {
  static const std::string none;
  return op.comm_group >= 0 ? step.groups.at(op.comm_group).family : none;
}

inline bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace overlapsim::workloads::testing
