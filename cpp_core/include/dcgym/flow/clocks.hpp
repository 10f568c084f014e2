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

// The hot path (several calls an event), inline.

inline void GroupClocks::SiftUp(Group& g, size_t slot) {
  std::vector<uint32_t>& m = g.members;
  const uint32_t f = m[slot];
  while (slot > 0) {
    const size_t parent = (slot - 1) >> 1;
    if (!Before(f, m[parent])) break;
    m[slot] = m[parent];
    slot_[m[slot]] = static_cast<uint32_t>(slot);
    slot = parent;
  }
  m[slot] = f;
  slot_[f] = static_cast<uint32_t>(slot);
}

inline void GroupClocks::SiftDown(Group& g, size_t slot) {
  std::vector<uint32_t>& m = g.members;
  const size_t n = m.size();
  const uint32_t f = m[slot];
  for (;;) {
    size_t child = 2 * slot + 1;
    if (child >= n) break;
    if (child + 1 < n && Before(m[child + 1], m[child])) ++child;
    if (!Before(m[child], f)) break;
    m[slot] = m[child];
    slot_[m[slot]] = static_cast<uint32_t>(slot);
    slot = child;
  }
  m[slot] = f;
  slot_[f] = static_cast<uint32_t>(slot);
}

inline void GroupClocks::Join(uint32_t gid, uint32_t f, double sent, double mark, double now) {
  Group& g = groups_[gid];
  if (g.members.empty()) {  // a fresh epoch keeps clock values small
    g.v0 = 0;
    g.t0 = now;
  }
  group_[f] = gid;
  off_[f] = g.v0 + g.rate * (now - g.t0) - sent;
  key_[f] = off_[f] + mark;
  g.members.push_back(f);
  SiftUp(g, g.members.size() - 1);
  total_rate_ += g.rate;
  if (g.members[0] == f) Reschedule(gid);
}

inline double GroupClocks::Leave(uint32_t f, double now) {
  const uint32_t gid = group_[f];
  Group& g = groups_[gid];
  const double sent = Sent(f, now);
  const size_t slot = slot_[f];
  const uint32_t last = g.members.back();
  g.members.pop_back();
  if (last != f) {
    g.members[slot] = last;
    slot_[last] = static_cast<uint32_t>(slot);
    SiftUp(g, slot);
    SiftDown(g, slot_[last]);
  }
  group_[f] = kNoGroup;
  total_rate_ -= g.rate;
  if (g.members.empty()) {
    g.v0 = 0;
    g.t0 = now;
  }
  if (slot == 0 || g.members.empty()) Reschedule(gid);
  return sent;
}

inline void GroupClocks::SetRate(uint32_t gid, double rate, double now) {
  Group& g = groups_[gid];
  Settle(g, now);
  total_rate_ += (rate - g.rate) * static_cast<double>(g.members.size());
  g.rate = rate;
  Reschedule(gid);
}

}  // namespace dcgym::flow
