#pragma once
// Fixtures shared by the workloads tests: a tiny MoE model and a YAML editor to derive
// variants of it.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "config/error.hpp"

namespace overlapsim::workloads::testing {

// |a - b| relative to b.
inline double rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

// 4 layers of 8 experts (top-2) on dp 4 x pp 2 with ep 4: small enough to generate fast.
inline constexpr const char* kTinyMoe = R"(name: tiny-moe
kind: moe
transformer:
  layers: 4
  hidden: 256
  vocab: 1000
  mlp: swiglu
  attention:
    heads: 8
moe:
  experts: 8
  top_k: 2
  expert_ffn_hidden: 512
training:
  seq_len: 128
  global_batch: 16
parallelism:
  dp: 4
  tp: 1
  pp: 2
  ep: 4
)";

// `text` with the first occurrence of each `from` replaced by its `to`; a missing `from`
// fails the test, so a variant never silently equals its base.
inline std::string edit(std::string text,
                        const std::vector<std::pair<std::string, std::string>>& subs) {
  for (const auto& [from, to] : subs) {
    auto at = text.find(from);
    if (at == std::string::npos)
      ADD_FAILURE() << "edit: '" << from << "' not in the YAML";
    else
      text.replace(at, from.size(), to);
  }
  return text;
}

// The message of the config::ConfigError `f` throws; "(no error)" if it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace overlapsim::workloads::testing
