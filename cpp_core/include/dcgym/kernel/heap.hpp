// Priority queues of the event engine.
//
// IndexedMinHeap keeps one key per id in [0, n) (e.g. each node's next event
// time) and lets an id's key change in O(log n); +infinity means "nothing
// scheduled". EventQueue is a plain timed-event heap whose ties pop in
// insertion order, so the order of simultaneous events never depends on the
// heap's internals. Both are 4-ary: shallower than binary heaps and kinder to
// the cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace dcgym::kernel {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

class IndexedMinHeap {
 public:
  explicit IndexedMinHeap(uint32_t n = 0) { Reset(n); }

  void Reset(uint32_t n) {
    heap_.resize(n);
    pos_.resize(n);
    key_.assign(n, kInfinity);
    for (uint32_t i = 0; i < n; ++i) heap_[i] = pos_[i] = i;
  }

  uint32_t Size() const { return static_cast<uint32_t>(heap_.size()); }
  uint32_t Top() const { return heap_[0]; }
  double TopKey() const { return heap_.empty() ? kInfinity : key_[heap_[0]]; }
  double Key(uint32_t id) const { return key_[id]; }

  void Update(uint32_t id, double key) {
    const double old = key_[id];
    key_[id] = key;
    if (key < old)
      SiftUp(pos_[id]);
    else if (key > old)
      SiftDown(pos_[id]);
  }

 private:
  void Place(uint32_t slot, uint32_t id) {
    heap_[slot] = id;
    pos_[id] = slot;
  }
  void SiftUp(uint32_t slot) {
    const uint32_t id = heap_[slot];
    const double k = key_[id];
    while (slot > 0) {
      const uint32_t parent = (slot - 1) >> 2;
      if (!(k < key_[heap_[parent]])) break;
      Place(slot, heap_[parent]);
      slot = parent;
    }
    Place(slot, id);
  }
  void SiftDown(uint32_t slot) {
    const uint32_t n = Size(), id = heap_[slot];
    const double k = key_[id];
    for (;;) {
      const uint32_t first = 4 * slot + 1;
      if (first >= n) break;
      uint32_t best = first;
      double best_key = key_[heap_[first]];
      const uint32_t last = first + 4 < n ? first + 4 : n;
      for (uint32_t c = first + 1; c < last; ++c) {
        const double ck = key_[heap_[c]];
        if (ck < best_key) {
          best = c;
          best_key = ck;
        }
      }
      if (!(best_key < k)) break;
      Place(slot, heap_[best]);
      slot = best;
    }
    Place(slot, id);
  }

  std::vector<uint32_t> heap_, pos_;
  std::vector<double> key_;
};

// A min-heap of timed payloads; equal times pop first-in first-out.
template <typename Payload>
class EventQueue {
 public:
  struct Entry {
    double time;
    uint64_t seq;
    Payload payload;
    bool Before(const Entry& o) const { return time < o.time || (time == o.time && seq < o.seq); }
  };

  bool Empty() const { return heap_.empty(); }
  size_t Size() const { return heap_.size(); }
  double TopTime() const { return heap_.empty() ? kInfinity : heap_[0].time; }
  const Entry& Top() const { return heap_[0]; }
  void Clear() { heap_.clear(); }
  // Visits every pending payload, in no particular order.
  template <typename F>
  void ForEach(F&& f) const {
    for (const auto& e : heap_) f(e.payload);
  }

  void Push(double time, Payload payload) {
    heap_.push_back(Entry{time, next_seq_++, std::move(payload)});
    size_t slot = heap_.size() - 1;
    Entry e = std::move(heap_[slot]);
    while (slot > 0) {
      const size_t parent = (slot - 1) >> 2;
      if (!e.Before(heap_[parent])) break;
      heap_[slot] = std::move(heap_[parent]);
      slot = parent;
    }
    heap_[slot] = std::move(e);
  }

  Entry Pop() {
    Entry top = std::move(heap_[0]);
    Entry e = std::move(heap_.back());
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n > 0) {
      size_t slot = 0;
      for (;;) {
        const size_t first = 4 * slot + 1;
        if (first >= n) break;
        size_t best = first;
        const size_t last = first + 4 < n ? first + 4 : n;
        for (size_t c = first + 1; c < last; ++c)
          if (heap_[c].Before(heap_[best])) best = c;
        if (!heap_[best].Before(e)) break;
        heap_[slot] = std::move(heap_[best]);
        slot = best;
      }
      heap_[slot] = std::move(e);
    }
    return top;
  }

 private:
  std::vector<Entry> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace dcgym::kernel

namespace dcgym::kernel {

// A small min-heap of timed payloads (e.g. the busy workers of one node),
// stored inline. It is 4-ary and padded with four +infinity sentinels, so the
// smallest child is found without bounds checks or data-dependent branches:
// with a few entries, mispredicted branches cost more than the comparisons.
template <typename Payload>
class SlotHeap {
 public:
  struct Entry {
    double time;
    Payload payload;
  };

  SlotHeap() : a_(kPad, Entry{kInfinity, Payload{}}) {}

  uint32_t Size() const { return n_; }
  bool Empty() const { return n_ == 0; }
  double TopTime() const { return a_[0].time; }  // +infinity when empty (a sentinel)

  void Push(double time, const Payload& p) {
    a_.push_back(Entry{kInfinity, Payload{}});  // keep kPad sentinels after n_ + 1 entries
    size_t slot = n_++;
    while (slot > 0) {
      const size_t parent = (slot - 1) >> 2;
      if (!(time < a_[parent].time)) break;
      a_[slot] = a_[parent];
      slot = parent;
    }
    a_[slot] = Entry{time, p};
  }

  // Removes the earliest entry and returns its payload.
  Payload Pop() {
    const Payload top = a_[0].payload;
    const Entry last = a_[--n_];
    a_[n_].time = kInfinity;
    a_.pop_back();
    if (n_ == 0) return top;
    size_t slot = 0;
    for (;;) {
      const size_t first = 4 * slot + 1;
      if (first >= n_) break;
      // A tournament with integer masks: GCC turns "less ? c : best" into a branch.
      const double t0 = a_[first].time, t1 = a_[first + 1].time, t2 = a_[first + 2].time, t3 = a_[first + 3].time;
      const size_t i01 = first + static_cast<size_t>(t1 < t0);
      const size_t i23 = first + 2 + static_cast<size_t>(t3 < t2);
      const double m01 = t1 < t0 ? t1 : t0, m23 = t3 < t2 ? t3 : t2;
      const size_t take23 = -static_cast<size_t>(m23 < m01);
      const size_t best = i01 ^ ((i01 ^ i23) & take23);
      const double best_time = m23 < m01 ? m23 : m01;
      if (!(best_time < last.time)) break;
      a_[slot] = a_[best];
      slot = best;
    }
    a_[slot] = last;
    return top;
  }

  template <typename F>
  void ForEach(F&& f) const {
    for (uint32_t i = 0; i < n_; ++i) f(a_[i].payload);
  }
  template <typename F>
  void ForEachTimed(F&& f) const {
    for (uint32_t i = 0; i < n_; ++i) f(a_[i].time, a_[i].payload);
  }

  // Replaces every entry's time by f(time, payload), then restores the heap.
  template <typename F>
  void Retime(F&& f) {
    std::vector<Entry> entries(a_.begin(), a_.begin() + n_);
    for (auto& e : entries) e.time = f(e.time, e.payload);
    a_.assign(kPad, Entry{kInfinity, Payload{}});
    n_ = 0;
    for (const auto& e : entries) Push(e.time, e.payload);
  }

 private:
  static constexpr size_t kPad = 4;
  std::vector<Entry> a_;  // n_ entries, then kPad +infinity sentinels
  uint32_t n_ = 0;
};

}  // namespace dcgym::kernel
