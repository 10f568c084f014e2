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
