#pragma once
// The parameters one overlap design reads from a profile's `designs:` section, with the
// source of each, so outputs can say which numbers were measured and which cited. A
// parameter the design needs but the profile lacks is a user error naming the profile
// and key (no hidden defaults: every number the simulator uses comes from a profile).
#include <string>
#include <vector>

#include "sim/profile/profile.hpp"

namespace overlapsim::sim {

struct ParameterUse {
  std::string key;  // e.g. "tilewise.comm_sms"
  double value = 0;
  Provenance source;
};

class DesignParameters {
 public:
  DesignParameters(const Profile& profile, std::string design);

  // Throws std::invalid_argument "profile P: designs.D.KEY: missing (expected ...)".
  double need(const std::string& key, const std::string& expected);
  // Like need(), and also requires value >= min_value.
  double need_at_least(const std::string& key, double min_value, const std::string& expected);

  // For a rate and a fixed time that only mean something together: true where the profile
  // has both keys, false where it has neither; one without the other throws
  // "P: designs.D.KEY missing: WHAT needs both its rate and its fixed time".
  bool has_rate_and_time(const std::string& rate_key, const std::string& time_key,
                         const std::string& what) const;

  const std::vector<ParameterUse>& used() const { return used_; }

 private:
  const Profile& profile_;
  std::string design_;
  std::vector<ParameterUse> used_;
};

}  // namespace overlapsim::sim
