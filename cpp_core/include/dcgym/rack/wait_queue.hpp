// The tasks waiting at a node for a worker, and which one goes next.
//
// fifo      one queue, first come first served (the default)
// per_type  one queue per task type; a freed worker takes the head of the
//           queue whose head has waited longest relative to its type's SLO
//           (Shinjuku's multi-queue policy, RackSched §3.6)
// priority  one queue per type; strict priority, lower value first; within
//           a priority, first come first served (RackSched §3.6). A task in
//           service is not interrupted, except at the end of a PS time slice.
#pragma once

#include <cstdint>
#include <vector>

#include "dcgym/kernel/ring_buffer.hpp"
#include "dcgym/rack/config.hpp"

namespace dcgym::rack {

template <typename T>
class WaitQueue {
 public:
  // slo_us and priority: one value per type (ignored for fifo).
  WaitQueue(Queueing policy, std::vector<double> slo_us, std::vector<int32_t> priority)
      : policy_(slo_us.size() <= 1 ? Queueing::kFifo : policy),
        queues_(policy_ == Queueing::kFifo ? 1 : slo_us.size()),
        inv_slo_(slo_us.size()),
        priority_(std::move(priority)) {
    for (size_t k = 0; k < slo_us.size(); ++k) inv_slo_[k] = 1.0 / slo_us[k];
  }

  size_t Size() const { return size_; }
  bool Empty() const { return size_ == 0; }

  void Push(const T& t) {
    queues_[policy_ == Queueing::kFifo ? 0 : t.cls].PushBack(t);
    ++size_;
  }
  // Re-queues a preempted task behind the others of its queue.
  void PushBack(const T& t) { Push(t); }

  // Removes the task that should be served next at time `now`.
  T PopNext(double now) {
    --size_;
    if (policy_ == Queueing::kFifo) return queues_[0].PopFront();
    size_t best = queues_.size();
    for (size_t k = 0; k < queues_.size(); ++k) {
      if (queues_[k].Empty()) continue;
      if (best == queues_.size() || Before(k, best, now)) best = k;
    }
    return queues_[best].PopFront();
  }

  // The task that has waited longest (work stealing); the queue must not be empty.
  const T& Oldest() const { return queues_[OldestQueue()].Front(); }
  T PopOldest() {
    --size_;
    return queues_[OldestQueue()].PopFront();
  }

  template <typename F>
  void ForEach(F&& f) const {
    for (const auto& q : queues_)
      for (size_t i = 0; i < q.Size(); ++i) f(q.At(i));
  }

 private:
  size_t OldestQueue() const {
    size_t best = queues_.size();
    for (size_t k = 0; k < queues_.size(); ++k)
      if (!queues_[k].Empty() && (best == queues_.size() || queues_[k].Front().arrival < queues_[best].Front().arrival))
        best = k;
    return best;
  }

  // Whether queue a's head should go before queue b's.
  bool Before(size_t a, size_t b, double now) const {
    if (policy_ == Queueing::kPriority) {
      if (priority_[a] != priority_[b]) return priority_[a] < priority_[b];
      return queues_[a].Front().arrival < queues_[b].Front().arrival;
    }
    return (now - queues_[a].Front().arrival) * inv_slo_[a] > (now - queues_[b].Front().arrival) * inv_slo_[b];
  }

  Queueing policy_;
  std::vector<kernel::RingBuffer<T>> queues_;
  std::vector<double> inv_slo_;
  std::vector<int32_t> priority_;
  size_t size_ = 0;
};

}  // namespace dcgym::rack
