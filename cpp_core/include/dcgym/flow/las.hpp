// Least attained service (foreground-background, FB) on one link, in exact
// fluid form: the flows with the least bytes sent share the link equally;
// when they catch up with the next-least they merge and share with them.
// This is MLFQ's limit with a threshold at every byte (Kleinrock, Queueing
// Systems Vol. II §4.6; Rai, Urvoy-Keller and Biersack, SIGMETRICS 2003).
//
// Flows with equal attained service form a band; an arriving flow (attained
// 0) forms or joins the lowest band, so bands stack by attained service and
// only the top of the stack is served. A band keeps its flows in a heap by
// size (all members have sent the same bytes, so the smallest finishes
// first). Merging moves the smaller heap into the larger, so a flow moves
// O(log n) times over its life.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dcgym::flow {

class LasLink {
 public:
  static constexpr uint32_t kNone = 0xffffffffu;

  explicit LasLink(double capacity) : capacity_(capacity) {}

  void Add(uint32_t f, double size, double now);
  double NextTime() const;
  // Handles the event due now (= NextTime()): returns the flow that
  // completed, or kNone when the served band caught up with the next.
  uint32_t Step(double now);

  double Attained(uint32_t f, double now) const;
  double RateOf(uint32_t f) const;
  uint32_t Count() const { return count_; }
  double TotalRate() const { return count_ > 0 ? capacity_ : 0.0; }

 private:
  struct Band {
    double attained;  // of its members; the top band's at time t0_
    uint32_t store;
  };

  bool Before(uint32_t a, uint32_t b) const { return size_[a] < size_[b] || (size_[a] == size_[b] && a < b); }
  void Push(std::vector<uint32_t>& heap, uint32_t f);
  uint32_t Pop(std::vector<uint32_t>& heap);
  double TopRate() const { return capacity_ / static_cast<double>(stores_[bands_.back().store].size()); }
  void Settle(double now);
  uint32_t NewStore();

  double capacity_;
  double t0_ = 0;
  uint32_t count_ = 0;
  std::vector<Band> bands_;  // back(): least attained, served
  std::vector<std::vector<uint32_t>> stores_;
  std::vector<uint32_t> free_stores_, band_of_store_;
  std::vector<uint32_t> store_of_;  // per flow
  std::vector<double> size_;        // per flow
};

}  // namespace dcgym::flow
