#include "kernels/harness/free_queue.hpp"

namespace overlapsim::kernels {
namespace {

thread_local FreeQueue* t_queue = nullptr;

}  // namespace

std::size_t FreeQueue::release_all() {
  // A releaser may not park again (release_now frees at once), so one pass empties it.
  std::vector<PendingFree> now;
  now.swap(pending_);
  for (const PendingFree& f : now) releaser_(f);
  return now.size();
}

FreeQueue* thread_free_queue() { return t_queue; }

ScopedFreeQueue::ScopedFreeQueue(FreeQueue& queue) : previous_(t_queue) { t_queue = &queue; }

ScopedFreeQueue::~ScopedFreeQueue() {
  FreeQueue* mine = t_queue;
  t_queue = previous_;
  if (mine != nullptr) mine->release_all();
}

}  // namespace overlapsim::kernels
