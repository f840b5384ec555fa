#include "planning/progress.hpp"

#include <fmt/format.h>

namespace overlapsim::planning {

ProgressLine::ProgressLine(bool enabled, std::size_t total, std::FILE* stream)
    : enabled_(enabled),
      total_(total),
      stream_(stream),
      start_(std::chrono::steady_clock::now()),
      last_() {}

void ProgressLine::set_total(std::size_t total) {
  std::lock_guard<std::mutex> lock(mutex_);
  total_ = total;
  draw(false);
}

void ProgressLine::advance() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++done_;
  draw(false);
}

void ProgressLine::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled_) return;
  draw(true);
  fmt::print(stream_, "\n");
  std::fflush(stream_);
}

void ProgressLine::draw(bool force) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_ < std::chrono::milliseconds(500) && done_ < total_) return;
  last_ = now;
  const double elapsed_s = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed_s > 0 ? done_ / elapsed_s : 0;
  std::string eta = "--";
  if (rate > 0 && total_ >= done_) {
    const long s = static_cast<long>((total_ - done_) / rate + 0.5);
    eta = fmt::format("{}m {:02d}s", s / 60, s % 60);
  }
  fmt::print(stream_, "\rplan: {}/{} configurations simulated, {:.2f}/s, ETA {}   ", done_, total_,
             rate, eta);
  std::fflush(stream_);
}

}  // namespace overlapsim::planning
