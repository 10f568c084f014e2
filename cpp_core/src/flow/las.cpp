#include "dcgym/flow/las.hpp"

#include <limits>
#include <utility>

namespace dcgym::flow {

void LasLink::Push(std::vector<uint32_t>& heap, uint32_t f) {
  heap.push_back(f);
  size_t slot = heap.size() - 1;
  while (slot > 0) {
    const size_t parent = (slot - 1) >> 1;
    if (!Before(f, heap[parent])) break;
    heap[slot] = heap[parent];
    slot = parent;
  }
  heap[slot] = f;
}

uint32_t LasLink::Pop(std::vector<uint32_t>& heap) {
  const uint32_t top = heap[0];
  const uint32_t f = heap.back();
  heap.pop_back();
  const size_t n = heap.size();
  if (n == 0) return top;
  size_t slot = 0;
  for (;;) {
    size_t child = 2 * slot + 1;
    if (child >= n) break;
    if (child + 1 < n && Before(heap[child + 1], heap[child])) ++child;
    if (!Before(heap[child], f)) break;
    heap[slot] = heap[child];
    slot = child;
  }
  heap[slot] = f;
  return top;
}

uint32_t LasLink::NewStore() {
  if (!free_stores_.empty()) {
    const uint32_t s = free_stores_.back();
    free_stores_.pop_back();
    return s;
  }
  stores_.emplace_back();
  band_of_store_.push_back(0);
  return static_cast<uint32_t>(stores_.size() - 1);
}

void LasLink::Settle(double now) {
  if (bands_.empty()) return;
  bands_.back().attained += TopRate() * (now - t0_);
  t0_ = now;
}

void LasLink::Add(uint32_t f, double size, double now) {
  if (f >= size_.size()) {
    size_.resize(size_t{f} + 1, 0.0);
    store_of_.resize(size_t{f} + 1, 0);
  }
  size_[f] = size;
  Settle(now);
  t0_ = now;
  if (bands_.empty() || bands_.back().attained != 0.0) {
    const uint32_t s = NewStore();
    band_of_store_[s] = static_cast<uint32_t>(bands_.size());
    bands_.push_back(Band{0.0, s});
  }
  const uint32_t s = bands_.back().store;
  store_of_[f] = s;
  Push(stores_[s], f);
  ++count_;
}

double LasLink::NextTime() const {
  if (bands_.empty()) return std::numeric_limits<double>::infinity();
  const Band& top = bands_.back();
  const double r = TopRate();
  double t = t0_ + (size_[stores_[top.store][0]] - top.attained) / r;
  if (bands_.size() > 1) {
    const double merge = t0_ + (bands_[bands_.size() - 2].attained - top.attained) / r;
    if (merge < t) t = merge;
  }
  return t;
}

uint32_t LasLink::Step(double now) {
  Band& top = bands_.back();
  std::vector<uint32_t>& heap = stores_[top.store];
  // The same comparison as NextTime(), before the clock moves: completion wins a tie.
  const double to_finish = size_[heap[0]] - top.attained;
  const bool merge = bands_.size() > 1 && bands_[bands_.size() - 2].attained - top.attained < to_finish;
  t0_ = now;
  if (!merge) {
    const uint32_t f = Pop(heap);
    top.attained = size_[f];
    --count_;
    if (heap.empty()) {
      free_stores_.push_back(top.store);
      bands_.pop_back();
    }
    return f;
  }
  // Merge the served band into the next: the larger heap keeps its store.
  Band served = top;
  bands_.pop_back();
  Band& next = bands_.back();
  uint32_t big = next.store, small = served.store;
  if (stores_[small].size() > stores_[big].size()) std::swap(big, small);
  for (const uint32_t f : stores_[small]) {
    store_of_[f] = big;
    Push(stores_[big], f);
  }
  stores_[small].clear();
  free_stores_.push_back(small);
  next.store = big;
  band_of_store_[big] = static_cast<uint32_t>(bands_.size() - 1);
  return kNone;
}

double LasLink::Attained(uint32_t f, double now) const {
  const uint32_t b = band_of_store_[store_of_[f]];
  double a = bands_[b].attained;
  if (b + 1 == bands_.size()) a += TopRate() * (now - t0_);
  return a;
}

double LasLink::RateOf(uint32_t f) const { return band_of_store_[store_of_[f]] + 1 == bands_.size() ? TopRate() : 0.0; }

}  // namespace dcgym::flow
