#include "kernels/harness/flag_parse.hpp"

#include <sstream>
#include <stdexcept>
#include <utility>

namespace overlapsim::kernels {

std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, sep))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

void bad_flag(const std::string& program, const std::string& flag, const std::string& value,
              const std::string& expected) {
  throw std::invalid_argument(program + ": " + flag + ": '" + value + "' is not " + expected);
}

std::int64_t flag_int(const std::string& program, const std::string& flag, const std::string& text,
                      std::int64_t min, std::int64_t max) {
  std::size_t used = 0;
  std::int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    bad_flag(program, flag, text, "an integer");
  }
  if (used != text.size() || value < min || value > max)
    bad_flag(program, flag, text,
             max == std::numeric_limits<std::int64_t>::max()
                 ? "an integer >= " + std::to_string(min)
                 : "an integer in " + std::to_string(min) + ".." + std::to_string(max));
  return value;
}

double flag_double(const std::string& program, const std::string& flag, const std::string& text,
                   double min, double max, const std::string& expected) {
  std::size_t used = 0;
  double value = 0;
  bool parsed = false;
  try {
    value = std::stod(text, &used);
    parsed = used == text.size();
  } catch (const std::exception&) {
  }
  if (!parsed || !(value >= min && value <= max)) bad_flag(program, flag, text, expected);
  return value;
}

bool FlagCursor::next(std::string* flag) {
  if (at_ >= args_.size()) return false;
  flag_ = args_[at_++];
  *flag = flag_;
  return true;
}

std::string FlagCursor::value() {
  if (at_ >= args_.size()) throw std::invalid_argument(program_ + ": " + flag_ + " needs a value");
  return args_[at_++];
}

}  // namespace overlapsim::kernels
