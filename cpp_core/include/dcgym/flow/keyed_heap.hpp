// An indexed 4-ary min-heap of (key, id) over ids that may grow: the group
// timers of the flow model and the links of progressive filling. A key
// changes in place in O(log n); ties go to the lower id, so the order never
// depends on the sequence of updates.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace dcgym::flow {

class KeyedHeap {
 public:
  static constexpr uint32_t kAbsent = 0xffffffffu;

  bool Empty() const { return heap_.empty(); }
  size_t Size() const { return heap_.size(); }
  uint32_t Top() const { return heap_[0]; }
  double TopKey() const { return heap_.empty() ? std::numeric_limits<double>::infinity() : key_[heap_[0]]; }
  bool Contains(uint32_t id) const { return id < pos_.size() && pos_[id] != kAbsent; }
  void Clear() {
    for (const uint32_t id : heap_) pos_[id] = kAbsent;
    heap_.clear();
  }

  // Sets id's key; +infinity removes id.
  void Set(uint32_t id, double key) {
    if (id >= pos_.size()) {
      pos_.resize(size_t{id} + 1, kAbsent);
      key_.resize(size_t{id} + 1, 0.0);
    }
    const uint32_t slot = pos_[id];
    if (std::isinf(key) && key > 0) {
      if (slot != kAbsent) Remove(slot);
      return;
    }
    if (slot == kAbsent) {
      key_[id] = key;
      heap_.push_back(id);
      SiftUp(heap_.size() - 1);
      return;
    }
    const double old = key_[id];
    key_[id] = key;
    if (key < old)
      SiftUp(slot);
    else if (key > old)
      SiftDown(slot);
  }

 private:
  bool Less(uint32_t a, uint32_t b) const { return key_[a] < key_[b] || (key_[a] == key_[b] && a < b); }
  void Place(size_t slot, uint32_t id) {
    heap_[slot] = id;
    pos_[id] = static_cast<uint32_t>(slot);
  }
  void Remove(uint32_t slot) {
    pos_[heap_[slot]] = kAbsent;
    const uint32_t last = heap_.back();
    heap_.pop_back();
    if (slot == heap_.size()) return;
    Place(slot, last);
    SiftUp(slot);
    SiftDown(pos_[last]);
  }
  void SiftUp(size_t slot) {
    const uint32_t id = heap_[slot];
    while (slot > 0) {
      const size_t parent = (slot - 1) >> 2;
      if (!Less(id, heap_[parent])) break;
      Place(slot, heap_[parent]);
      slot = parent;
    }
    Place(slot, id);
  }
  void SiftDown(size_t slot) {
    const size_t n = heap_.size();
    const uint32_t id = heap_[slot];
    for (;;) {
      const size_t first = 4 * slot + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t last = first + 4 < n ? first + 4 : n;
      for (size_t c = first + 1; c < last; ++c)
        if (Less(heap_[c], heap_[best])) best = c;
      if (!Less(heap_[best], id)) break;
      Place(slot, heap_[best]);
      slot = best;
    }
    Place(slot, id);
  }

  std::vector<uint32_t> heap_, pos_;
  std::vector<double> key_;
};

}  // namespace dcgym::flow
