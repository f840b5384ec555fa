#include "sim/overlap/design_parameters.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "config/error.hpp"

namespace overlapsim::sim {

DesignParameters::DesignParameters(const Profile& profile, std::string design)
    : profile_(profile), design_(std::move(design)) {}

double DesignParameters::need(const std::string& key, const std::string& expected) {
  const Sourced* s = profile_.designs.find(design_, key);
  if (!s)
    throw config::ConfigError(fmt::format(
        "{}: designs.{}.{}: missing (expected {}, with source and citation; see docs/designs.md)",
        profile_.path.empty() ? profile_.name : profile_.path, design_, key, expected));
  used_.push_back({design_ + "." + key, s->value, s->source});
  return s->value;
}

double DesignParameters::need_at_least(const std::string& key, double min_value,
                                       const std::string& expected) {
  const double v = need(key, expected);
  if (!(v >= min_value))
    throw config::ConfigError(fmt::format("{}: designs.{}.{}: {} is out of range (expected {})",
                                            profile_.path.empty() ? profile_.name : profile_.path,
                                            design_, key, v, expected));
  return v;
}

}  // namespace overlapsim::sim
