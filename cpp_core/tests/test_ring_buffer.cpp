// RingBuffer against std::deque: order is kept across growth (including
// growth while the contents wrap around the end of the array).
#include <cstdint>
#include <deque>

#include "check.hpp"
#include "dcgym/kernel/ring_buffer.hpp"
#include "dcgym/kernel/rng.hpp"

using dcgym::kernel::RingBuffer;
using dcgym::kernel::Rng;

namespace {

bool SameContents(const RingBuffer<int64_t>& rb, const std::deque<int64_t>& ref) {
  if (rb.Size() != ref.size() || rb.Empty() != ref.empty()) return false;
  for (size_t i = 0; i < ref.size(); ++i)
    if (rb.At(i) != ref[i]) return false;
  return true;
}

void TestGrowthKeepsFifoOrder() {
  RingBuffer<int64_t> rb;
  std::deque<int64_t> ref;
  // Shift the head off 0 first so the first growth happens while wrapped.
  for (int64_t i = 0; i < 5; ++i) {
    rb.PushBack(-i);
    rb.PopFront();
  }
  for (int64_t i = 0; i < 100000; ++i) {
    rb.PushBack(i);
    ref.push_back(i);
  }
  CHECK(SameContents(rb, ref));
  CHECK_EQ(rb.Front(), int64_t{0});
  CHECK_EQ(rb.Back(), int64_t{99999});
  int64_t expected = 0, wrong = 0;
  while (!rb.Empty()) wrong += rb.PopFront() != expected++;
  CHECK_EQ(wrong, int64_t{0});
  CHECK_EQ(expected, int64_t{100000});
}

void TestRandomOperationsMatchDeque() {
  Rng rng(6, 0);
  RingBuffer<int64_t> rb;
  std::deque<int64_t> ref;
  int64_t next = 0;
  int mismatches = 0;
  for (int op = 0; op < 300000; ++op) {
    // phases of net growth and net shrinkage so the ring wraps at many sizes
    const uint32_t push_pct = (op / 20000) % 2 == 0 ? 65 : 35;
    const uint32_t r = rng.Below(100);
    if (ref.empty() || r < push_pct) {
      rb.PushBack(next);
      ref.push_back(next++);
    } else if (r < push_pct + (100 - push_pct) * 3 / 4) {
      mismatches += rb.PopFront() != ref.front();
      ref.pop_front();
    } else {
      mismatches += rb.PopBack() != ref.back();
      ref.pop_back();
    }
    if (!ref.empty()) mismatches += rb.Front() != ref.front() || rb.Back() != ref.back();
    if (op % 997 == 0) mismatches += !SameContents(rb, ref);
  }
  CHECK_EQ(mismatches, 0);
  CHECK(SameContents(rb, ref));
  rb.Clear();
  CHECK(rb.Empty());
  CHECK_EQ(rb.Size(), size_t{0});
  rb.PushBack(42);
  CHECK_EQ(rb.Front(), int64_t{42});
}

}  // namespace

int main() {
  TestGrowthKeepsFifoOrder();
  TestRandomOperationsMatchDeque();
  return dcgym::check::Report("test_ring_buffer");
}
