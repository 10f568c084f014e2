// Lazy bytes-sent for flows that share a rate.
//
// Every flow belongs to a rate group (in the model: its bottleneck, a
// (level, link) pair, or itself when its cap or SRPT sets its rate), and all
// flows of a group have the group's rate. A group keeps a virtual clock V,
// the bytes any one member has been sent since the group's epoch, advanced
// lazily: V(t) = v0 + rate (t - t0). A member stores off = V - sent when it
// joins, so sent(t) = V(t) - off, and its next mark (a threshold or its
// size) as the clock value key = off + mark. A change of the group's rate
// is then O(log groups), whatever the number of members: nothing sweeps over
// flows (the virtual time of processor sharing; Kleinrock, Queueing Systems
// Vol. II §4.4, and its use in fair queueing by Demers, Keshav and Shenker,
// SIGCOMM 1989).
//
// Members are kept in a min-heap by (key, flow), groups in a timer heap by
// (time of their first mark, group), so ties resolve by id and a seed gives
// the same bits whatever the order of updates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "dcgym/flow/keyed_heap.hpp"

namespace dcgym::flow {

class GroupClocks {
 public:
  static constexpr uint32_t kNoGroup = 0xffffffffu;

  // Makes room for group ids < groups and flow ids < flows.
  void Grow(uint32_t groups, uint32_t flows);

  void Join(uint32_t g, uint32_t f, double sent, double mark, double now);
  // Takes f out of its group; returns its bytes sent.
  double Leave(uint32_t f, double now);
  void SetRate(uint32_t g, double rate, double now);
  // A new mark for a member (bytes sent at which it needs attention).
  void SetMark(uint32_t f, double mark, double now);

  double Sent(uint32_t f, double now) const {
    const Group& g = groups_[group_[f]];
    return g.v0 + g.rate * (now - g.t0) - off_[f];
  }
  uint32_t GroupOf(uint32_t f) const { return group_[f]; }
  double Rate(uint32_t g) const { return groups_[g].rate; }
  double RateOf(uint32_t f) const { return groups_[group_[f]].rate; }
  uint32_t Count(uint32_t g) const { return static_cast<uint32_t>(groups_[g].members.size()); }

  // Brings the group timers up to date. Join, Leave, SetRate and SetMark
  // only note the groups they touch (a group is often touched several times
  // in one event); call Flush before NextTime / NextFlow.
  void Flush(double now);
  // Without timers (a caller that knows which group moves, as the model's
  // single-bottleneck allocation does) Join, Leave and SetRate skip the
  // timer bookkeeping; turning them on recomputes every group's timer.
  void UseTimers(bool on);
  // When group g's first member reaches its mark (+infinity if never), and who.
  double GroupNextTime(uint32_t g, double now) const {
    const Group& gr = groups_[g];
    if (gr.members.empty() || !(gr.rate > 0)) return std::numeric_limits<double>::infinity();
    const double t = gr.t0 + (key_[gr.members[0]] - gr.v0) / gr.rate;
    return t < now ? now : t;
  }
  uint32_t GroupFirst(uint32_t g) const { return groups_[g].members[0]; }
  // The first flow to reach its mark, and when.
  double NextTime() const { return timers_.TopKey(); }
  uint32_t NextFlow() const { return groups_[timers_.Top()].members[0]; }
  // Sum of all members' rates (kept by differences: ZeroTotalRate() when no flow is left).
  double TotalRate() const { return total_rate_; }
  void ZeroTotalRate() { total_rate_ = 0; }

 private:
  struct Group {
    double v0 = 0, t0 = 0, rate = 0;
    std::vector<uint32_t> members;  // binary heap by (key, flow)
  };

  bool Before(uint32_t a, uint32_t b) const { return key_[a] < key_[b] || (key_[a] == key_[b] && a < b); }
  void Settle(Group& g, double now) {
    g.v0 += g.rate * (now - g.t0);
    g.t0 = now;
  }
  void Reschedule(uint32_t g) {
    if (timers_on_ && !stale_[g]) {
      stale_[g] = 1;
      touched_.push_back(g);
    }
  }
  void SiftUp(Group& g, size_t slot);
  void SiftDown(Group& g, size_t slot);

  std::vector<Group> groups_;
  std::vector<uint8_t> stale_;          // per group: timer to recompute at Flush
  std::vector<uint32_t> touched_;       // groups with stale timers
  std::vector<uint32_t> group_, slot_;  // per flow: group and index in its heap
  std::vector<double> off_, key_;       // per flow
  KeyedHeap timers_;
  bool timers_on_ = true;
  double total_rate_ = 0;
};

}  // namespace dcgym::flow
