#include "dcgym/flow/clocks.hpp"

#include <cmath>

namespace dcgym::flow {

// ------------------------------------------------------------------ groups

void GroupClocks::Grow(uint32_t groups, uint32_t flows) {
  if (groups > groups_.size()) {
    groups_.resize(groups);
    stale_.resize(groups, 0);
  }
  if (flows > group_.size()) {
    group_.resize(flows, kNoGroup);
    slot_.resize(flows, 0);
    off_.resize(flows, 0.0);
    key_.resize(flows, 0.0);
  }
}

void GroupClocks::SiftUp(Group& g, size_t slot) {
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

void GroupClocks::SiftDown(Group& g, size_t slot) {
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

void GroupClocks::UseTimers(bool on) {
  if (on && !timers_on_) {
    timers_on_ = true;
    for (uint32_t g = 0; g < groups_.size(); ++g) Reschedule(g);
  }
  timers_on_ = on;
}

void GroupClocks::Flush(double now) {
  for (const uint32_t gid : touched_) {
    stale_[gid] = 0;
    const Group& g = groups_[gid];
    if (g.members.empty() || !(g.rate > 0)) {
      timers_.Set(gid, std::numeric_limits<double>::infinity());
      continue;
    }
    double t = g.t0 + (key_[g.members[0]] - g.v0) / g.rate;
    if (t < now) t = now;  // rounding: a mark is never in the past
    timers_.Set(gid, t);
  }
  touched_.clear();
}

void GroupClocks::Join(uint32_t gid, uint32_t f, double sent, double mark, double now) {
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

double GroupClocks::Leave(uint32_t f, double now) {
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

void GroupClocks::SetRate(uint32_t gid, double rate, double now) {
  Group& g = groups_[gid];
  Settle(g, now);
  total_rate_ += (rate - g.rate) * static_cast<double>(g.members.size());
  g.rate = rate;
  Reschedule(gid);
}

void GroupClocks::SetMark(uint32_t f, double mark, double /*now: timers update at Flush*/) {
  const uint32_t gid = group_[f];
  Group& g = groups_[gid];
  const double old = key_[f];
  key_[f] = off_[f] + mark;
  if (key_[f] < old)
    SiftUp(g, slot_[f]);
  else
    SiftDown(g, slot_[f]);
  Reschedule(gid);
}

}  // namespace dcgym::flow
