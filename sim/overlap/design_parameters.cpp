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

bool DesignParameters::has_rate_and_time(const std::string& rate_key,
                                         const std::string& time_key,
                                         const std::string& what) const {
  const bool rate = profile_.designs.find(design_, rate_key) != nullptr;
  const bool time = profile_.designs.find(design_, time_key) != nullptr;
  if (rate != time)
    throw config::ConfigError(fmt::format(
        "{}: designs.{}.{} missing: {} needs both its rate and its fixed time", profile_.path,
        design_, rate ? time_key : rate_key, what));
  return rate;
}

}  // namespace overlapsim::sim
