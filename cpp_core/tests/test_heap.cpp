// IndexedMinHeap, EventQueue and SlotHeap against simple sorted references
// under long random operation sequences.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "dcgym/kernel/heap.hpp"
#include "dcgym/kernel/rng.hpp"

using dcgym::kernel::EventQueue;
using dcgym::kernel::IndexedMinHeap;
using dcgym::kernel::kInfinity;
using dcgym::kernel::Rng;
using dcgym::kernel::SlotHeap;

namespace {

// Keys from a small grid make ties frequent; some are +infinity ("nothing scheduled").
double RandomKey(Rng& rng) {
  const uint32_t k = rng.Below(40);
  return k == 0 ? kInfinity : static_cast<double>(k % 13) + (k > 26 ? 0.5 : 0.0);
}

void TestIndexedMinHeapAgainstScan() {
  Rng rng(1, 0);
  for (uint32_t n : {1u, 2u, 3u, 4u, 5u, 17u, 100u}) {
    IndexedMinHeap heap(n);
    std::vector<double> keys(n, kInfinity);
    CHECK_EQ(heap.Size(), n);
    CHECK_EQ(heap.TopKey(), kInfinity);
    int wrong_min = 0, wrong_top = 0, wrong_key = 0;
    for (int op = 0; op < 20000; ++op) {
      const uint32_t id = rng.Below(n);
      const double key = RandomKey(rng);
      heap.Update(id, key);
      keys[id] = key;
      const double min = *std::min_element(keys.begin(), keys.end());
      wrong_min += heap.TopKey() != min;
      wrong_top += keys[heap.Top()] != min;  // Top() is an id holding the minimum
      wrong_key += heap.Key(id) != key;
    }
    CHECK_EQ(wrong_min, 0);
    CHECK_EQ(wrong_top, 0);
    CHECK_EQ(wrong_key, 0);
    heap.Reset(n);
    CHECK_EQ(heap.TopKey(), kInfinity);
  }
  IndexedMinHeap empty(0);
  CHECK_EQ(empty.TopKey(), kInfinity);
}

void TestEventQueueAgainstSortedReference() {
  // Reference: a map ordered by (time, insertion number); EventQueue must pop
  // exactly that order, so equal times pop first-in first-out.
  Rng rng(2, 0);
  EventQueue<int> q;
  std::map<std::pair<double, uint64_t>, int> ref;
  uint64_t seq = 0;
  int wrong = 0, wrong_top = 0;
  for (int op = 0; op < 200000; ++op) {
    const bool push = ref.empty() || rng.Below(100) < 55;
    if (push) {
      const double t = static_cast<double>(rng.Below(50));  // many ties
      const int payload = static_cast<int>(rng.Below(1u << 30));
      q.Push(t, payload);
      ref.emplace(std::pair{t, seq++}, payload);
    } else {
      const auto e = q.Pop();
      const auto it = ref.begin();
      wrong += e.time != it->first.first || e.payload != it->second;
      ref.erase(it);
    }
    wrong_top += q.Size() != ref.size() || q.TopTime() != (ref.empty() ? kInfinity : ref.begin()->first.first);
  }
  CHECK_EQ(wrong, 0);
  CHECK_EQ(wrong_top, 0);
  while (!q.Empty()) q.Pop();
  CHECK_EQ(q.TopTime(), kInfinity);

  // All at one time: strictly insertion order; move-only-ish payloads survive.
  EventQueue<std::string> same;
  for (int i = 0; i < 1000; ++i) same.Push(5.0, std::to_string(i));
  int out_of_order = 0;
  for (int i = 0; i < 1000; ++i) out_of_order += same.Pop().payload != std::to_string(i);
  CHECK_EQ(out_of_order, 0);
  CHECK(same.Empty());
}

struct Timed {
  double time;
  int id;
};

void TestSlotHeapAgainstMultiset() {
  // SlotHeap pops a payload with the smallest time (ties in any order) and
  // keeps +infinity sentinels so TopTime() is +infinity when empty.
  Rng rng(3, 0);
  SlotHeap<Timed> heap;
  std::multiset<std::pair<double, int>> ref;
  CHECK_EQ(heap.TopTime(), kInfinity);
  int next_id = 0, wrong_pop = 0, wrong_top = 0, wrong_size = 0, wrong_contents = 0;
  for (int op = 0; op < 200000; ++op) {
    // drift between filling up (to ~64 entries) and draining to empty
    const bool fill_phase = (op / 5000) % 2 == 0;
    const bool push = ref.empty() || rng.Below(100) < (fill_phase ? 60u : 40u);
    if (push) {
      const double t = static_cast<double>(rng.Below(30)) * 0.25;
      heap.Push(t, Timed{t, next_id});
      ref.emplace(t, next_id++);
    } else {
      const double min = ref.begin()->first;
      const Timed got = heap.Pop();
      const auto it = ref.find({got.time, got.id});
      wrong_pop += got.time != min || it == ref.end();
      if (it != ref.end()) ref.erase(it);
    }
    wrong_size += heap.Size() != ref.size() || heap.Empty() != ref.empty();
    wrong_top += heap.TopTime() != (ref.empty() ? kInfinity : ref.begin()->first);
    if (op % 1000 == 0) {
      std::multiset<std::pair<double, int>> seen;
      heap.ForEach([&seen](const Timed& e) { seen.emplace(e.time, e.id); });
      wrong_contents += seen != ref;
    }
  }
  CHECK_EQ(wrong_pop, 0);
  CHECK_EQ(wrong_top, 0);
  CHECK_EQ(wrong_size, 0);
  CHECK_EQ(wrong_contents, 0);
}

}  // namespace

int main() {
  TestIndexedMinHeapAgainstScan();
  TestEventQueueAgainstSortedReference();
  TestSlotHeapAgainstMultiset();
  return dcgym::check::Report("test_heap");
}
