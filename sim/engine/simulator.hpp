#pragma once
// The discrete-event engine. It knows only time and callbacks: models (network,
// compute, collectives) schedule events; nothing here is about GPUs or networks.
// Ordering is (time, sequence number), so events at equal times run in the order they
// were scheduled and every run of the same input is bit-for-bit identical.
#include <bit>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "sim/engine/callback.hpp"

namespace overlapsim::sim {

using EventId = std::uint64_t;
inline constexpr EventId kNoEvent = 0;

class Simulator {
 public:
  using Callback = sim::Callback;

  // Runs `cb` (a Callback or any void() callable) at now() + delay_s. Throws
  // std::invalid_argument for negative or NaN delays. The callable is built in its event's
  // slot, not moved there through a Callback.
  template <typename F>
  EventId schedule(double delay_s, F&& cb) {
    check_delay(delay_s);
    return schedule_at(now_s_ + delay_s, std::forward<F>(cb));
  }
  // Runs `cb` at absolute time `time_s` >= now().
  template <typename F>
  EventId schedule_at(double time_s, F&& cb) {
    check_time(time_s);
    const std::uint32_t index = take_slot();
    Slot& s = slot(index);
    try {
      s.cb.assign(std::forward<F>(cb));
    } catch (...) {
      free_slots_.push_back(index);
      throw;
    }
    if (!s.cb) {
      free_slots_.push_back(index);
      throw_empty_callback();
    }
    return enqueue(time_s, index);
  }
  // Cancels a pending event; returns false when it already ran or was cancelled.
  bool cancel(EventId id);

  double now() const { return now_s_; }
  // Runs until no event is left (or stop() is called from a callback).
  void run();
  // Runs events with time <= until_s, then sets now() = until_s if it got that far.
  void run_until(double until_s);
  void stop() { stopped_ = true; }

  std::uint64_t events_processed() const { return processed_; }
  std::size_t pending() const {
    return queue_.size() + (now_slots_.size() - now_head_) - cancelled_pending_;
  }

 private:
  // A heap entry is 16 bytes, so a 4-ary heap node's children fill one cache line: the
  // sequence number and the callback's slot share one word, the sequence number in the
  // high bits. Sequence numbers are unique, so ordering by that word orders by (time, seq).
  static constexpr unsigned kSlotBits = 26;  // up to 64 M pending events (~11 GiB of slots)
  static constexpr std::uint64_t kMaxSeq = std::uint64_t{1} << (64 - kSlotBits);
  struct Event {
    double time_s;           // finite, >= 0 and never -0.0, so its bits order as the value does
    std::uint64_t seq_slot;  // seq << kSlotBits | slot
    std::uint32_t slot() const {
      return static_cast<std::uint32_t>(seq_slot & ((std::uint64_t{1} << kSlotBits) - 1));
    }
    // The heap's order: the smallest (time, seq) first, as one 128-bit comparison of
    // (time's bits, seq): one branch per child in the heap's scans instead of two.
    static bool earlier(const Event& a, const Event& b) {
      __extension__ typedef unsigned __int128 Key;  // GCC and Clang; -Wpedantic would warn
      const Key ka = static_cast<Key>(std::bit_cast<std::uint64_t>(a.time_s)) << 64 | a.seq_slot;
      const Key kb = static_cast<Key>(std::bit_cast<std::uint64_t>(b.time_s)) << 64 | b.seq_slot;
      return ka < kb;
    }
  };
  bool pop_one(double limit_s);
  void pop_event();  // removes queue_'s least
  void check_delay(double delay_s) const;
  void check_time(double time_s) const;
  [[noreturn]] static void throw_empty_callback();
  std::uint32_t take_slot();                            // a free slot's index
  EventId enqueue(double time_s, std::uint32_t index);  // the slot's callback is set

  // Callbacks live in recycled slots so memory tracks pending events, not all events.
  // An EventId is (slot + 1) << 32 | generation, so a stale id never cancels a reused slot.
  // Slots sit in fixed-size chunks that never move, so a callback runs where it was stored
  // even while it schedules others (no move out per event); its slot is recycled after.
  struct Slot {
    Callback cb;
    std::uint32_t generation = 0;
    bool live = false;
  };
  static constexpr std::uint32_t kChunkBits = 8;
  static constexpr std::uint32_t kChunkSlots = 1u << kChunkBits;
  Slot& slot(std::uint32_t i) { return chunks_[i >> kChunkBits][i & (kChunkSlots - 1)]; }

  std::vector<Event> queue_;  // 4-ary min-heap by Event::earlier
  // Events scheduled for the current time (a zero delay: a quarter of a step's events where
  // collectives run as flows), in scheduling order. Every event at now() still in the heap
  // was scheduled before now() reached that time, so it has a lower sequence number and
  // runs first; the rest of the heap lies later. Popping these in order is (time, seq)
  // order without a heap push and pop each.
  std::vector<std::uint32_t> now_slots_;
  std::size_t now_head_ = 0;
  std::vector<std::unique_ptr<Slot[]>> chunks_;
  std::uint32_t num_slots_ = 0;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_seq_ = 1;
  std::uint64_t processed_ = 0;
  std::size_t cancelled_pending_ = 0;
  double now_s_ = 0.0;
  bool stopped_ = false;
};

}  // namespace overlapsim::sim
