#include "sim/engine/simulator.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "sim/engine/dary_heap.hpp"

namespace overlapsim::sim {

namespace {
// Children per node of the event heap: pops walk half the levels of a binary heap, and a
// node's four children share a cache line or two.
constexpr std::size_t kHeapArity = 4;
}  // namespace

// Removes the least event: the last one goes down from the root along the least children.
// A full node's four children are compared as a tournament of conditional selects (the
// 128-bit key's borrow), not a running minimum with a branch per child.
void Simulator::pop_event() {
  const Event last = queue_.back();
  queue_.pop_back();
  const std::size_t n = queue_.size();
  if (n == 0) return;
  Event* const v = queue_.data();
  std::size_t i = 0;
  for (;;) {
    const std::size_t first = kHeapArity * i + 1;
    if (first >= n) break;
    std::size_t best = first;
    if (first + kHeapArity <= n) {
      const std::size_t b01 = Event::earlier(v[first + 1], v[first]) ? first + 1 : first;
      const std::size_t b23 = Event::earlier(v[first + 3], v[first + 2]) ? first + 3 : first + 2;
      best = Event::earlier(v[b23], v[b01]) ? b23 : b01;
    } else {
      for (std::size_t c = first + 1; c < n; ++c) best = Event::earlier(v[c], v[best]) ? c : best;
    }
    if (!Event::earlier(v[best], last)) break;
    v[i] = v[best];
    i = best;
  }
  v[i] = last;
}

void Simulator::check_delay(double delay_s) const {
  if (std::isnan(delay_s) || delay_s < 0.0)
    throw std::invalid_argument("Simulator::schedule: delay must be >= 0 and not NaN, got " +
                                std::to_string(delay_s));
}

void Simulator::check_time(double time_s) const {
  if (std::isnan(time_s) || time_s < now_s_ || std::isinf(time_s))
    throw std::invalid_argument("Simulator::schedule_at: time must be finite and >= now(), got " +
                                std::to_string(time_s));
}

void Simulator::throw_empty_callback() {
  throw std::invalid_argument("Simulator::schedule: empty callback");
}

std::uint32_t Simulator::take_slot() {
  if (!free_slots_.empty()) {
    const std::uint32_t index = free_slots_.back();
    free_slots_.pop_back();
    return index;
  }
  if (num_slots_ == (std::uint32_t{1} << kSlotBits))
    throw std::length_error("Simulator: too many pending events");
  if ((num_slots_ & (kChunkSlots - 1)) == 0)
    chunks_.push_back(std::make_unique<Slot[]>(kChunkSlots));
  return num_slots_++;
}

EventId Simulator::enqueue(double time_s, std::uint32_t index) {
  Slot& s = slot(index);
  if (next_seq_ == kMaxSeq) {
    s.cb = nullptr;
    free_slots_.push_back(index);
    throw std::length_error("Simulator: event sequence numbers exhausted");
  }
  s.live = true;
  ++s.generation;
  const std::uint64_t seq = next_seq_++;
  if (time_s == now_s_) {
    now_slots_.push_back(index);
  } else {
    // + 0.0 turns -0.0 into +0.0, whose bits order as Event::earlier needs.
    queue_.push_back(Event{time_s + 0.0, seq << kSlotBits | index});
    // A lambda, not Event::earlier itself: a function pointer is not inlined into the
    // heap's loops, and those calls were a twentieth of a step's simulation.
    dary_push_heap<kHeapArity>(queue_,
                               [](const Event& a, const Event& b) { return Event::earlier(a, b); });
  }
  return (static_cast<EventId>(index) + 1) << 32 | s.generation;
}

bool Simulator::cancel(EventId id) {
  if (id == kNoEvent) return false;
  const std::uint64_t slot_plus_one = id >> 32;
  if (slot_plus_one == 0 || slot_plus_one > num_slots_) return false;
  Slot& s = slot(static_cast<std::uint32_t>(slot_plus_one - 1));
  if (!s.live || s.generation != static_cast<std::uint32_t>(id & 0xffffffffu)) return false;
  s.live = false;
  s.cb = nullptr;
  ++cancelled_pending_;
  return true;
}

bool Simulator::pop_one(double limit_s) {
  for (;;) {
    std::uint32_t index;
    // Events at now() in the heap were scheduled before those in now_slots_ (see there).
    if (now_head_ < now_slots_.size() && (queue_.empty() || queue_.front().time_s != now_s_)) {
      index = now_slots_[now_head_++];
      if (now_head_ == now_slots_.size()) {
        now_slots_.clear();
        now_head_ = 0;
      }
      Slot& s = slot(index);
      if (!s.live) {  // cancelled: drop it, recycle the slot
        --cancelled_pending_;
        free_slots_.push_back(index);
        continue;
      }
    } else {
      if (queue_.empty()) return false;
      const Event ev = queue_.front();
      index = ev.slot();
      Slot& s = slot(index);
      if (!s.live) {  // cancelled: drop it without advancing time, recycle the slot
        pop_event();
        --cancelled_pending_;
        free_slots_.push_back(index);
        continue;
      }
      if (ev.time_s > limit_s) return false;
      pop_event();
      now_s_ = ev.time_s;
    }
    Slot& s = slot(index);
    s.live = false;
    ++processed_;
    // Run in place: the slot is neither moved nor reused until the callback returns.
    s.cb();
    s.cb = nullptr;
    free_slots_.push_back(index);
    return true;
  }
}

void Simulator::run() {
  stopped_ = false;
  while (!stopped_ && pop_one(std::numeric_limits<double>::infinity())) {
  }
}

void Simulator::run_until(double until_s) {
  if (std::isnan(until_s) || until_s < now_s_)
    throw std::invalid_argument("Simulator::run_until: time must be >= now()");
  stopped_ = false;
  while (!stopped_ && pop_one(until_s)) {
  }
  if (!stopped_) now_s_ = until_s;
}

}  // namespace overlapsim::sim
