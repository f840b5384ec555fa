#pragma once
// Command-line parsing shared by the kernel tools (overlap-bench, own-gemm-bench, ...):
// every error is a std::invalid_argument whose one-line message starts with the program,
// names the flag and says what was expected; the tools' main turns it into exit code 2.
// Nothing here exits.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace overlapsim::kernels {

// The non-empty items of `text` between `sep`s.
std::vector<std::string> split_list(const std::string& text, char sep = ',');

// "program: flag: 'value' is not expected".
[[noreturn]] void bad_flag(const std::string& program, const std::string& flag,
                           const std::string& value, const std::string& expected);

// `text` as a whole integer in [min, max], else bad_flag.
std::int64_t flag_int(const std::string& program, const std::string& flag, const std::string& text,
                      std::int64_t min,
                      std::int64_t max = std::numeric_limits<std::int64_t>::max());
// `text` as a whole number in [min, max], else bad_flag with `expected`.
double flag_double(const std::string& program, const std::string& flag, const std::string& text,
                   double min, double max, const std::string& expected);

// Walks argv-style arguments: next() yields each flag, value() the argument after it
// ("program: flag needs a value" when there is none).
class FlagCursor {
 public:
  FlagCursor(std::string program, const std::vector<std::string>& args)
      : program_(std::move(program)), args_(args) {}
  bool next(std::string* flag);
  std::string value();
  const std::string& program() const { return program_; }

 private:
  std::string program_;
  const std::vector<std::string>& args_;
  std::size_t at_ = 0;
  std::string flag_;
};

}  // namespace overlapsim::kernels
