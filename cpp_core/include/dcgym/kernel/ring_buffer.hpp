// A FIFO queue on a power-of-two ring that grows on demand and never
// shrinks: memory tracks the largest backlog seen, not the number of items
// that went through it.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace dcgym::kernel {

template <typename T>
class RingBuffer {
 public:
  RingBuffer() : buf_(8), mask_(7) {}

  size_t Size() const { return tail_ - head_; }
  bool Empty() const { return tail_ == head_; }
  T& Front() { return buf_[head_ & mask_]; }
  const T& Front() const { return buf_[head_ & mask_]; }
  T& Back() { return buf_[(tail_ - 1) & mask_]; }
  // i-th element from the front.
  const T& At(size_t i) const { return buf_[(head_ + i) & mask_]; }

  void PushBack(const T& v) {
    if (Size() == buf_.size()) Grow();
    buf_[tail_++ & mask_] = v;
  }
  T PopFront() { return std::move(buf_[head_++ & mask_]); }
  T PopBack() { return std::move(buf_[--tail_ & mask_]); }
  void Clear() { head_ = tail_ = 0; }

 private:
  void Grow() {
    std::vector<T> bigger(buf_.size() * 2);
    const size_t n = Size();
    for (size_t i = 0; i < n; ++i) bigger[i] = std::move(buf_[(head_ + i) & mask_]);
    buf_.swap(bigger);
    mask_ = buf_.size() - 1;
    head_ = 0;
    tail_ = n;
  }

  std::vector<T> buf_;
  size_t mask_;
  size_t head_ = 0, tail_ = 0;
};

}  // namespace dcgym::kernel
