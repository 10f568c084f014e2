// FlowSim: construction and the event loop (arrivals, marks, completions).
#include "dcgym/flow/flow_sim.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dcgym/kernel/check.hpp"

namespace dcgym::flow {

namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();
}

FlowSim::FlowSim(const FlowConfig& config)
    : config_((config.Validate(), config)),
      discipline_(config.discipline),
      topology_(config.topology),
      arrivals_(config_, topology_),
      solver_(topology_.Capacity(), config.levels, config.incremental),
      num_link_groups_(config.levels * topology_.NumLinks()),
      thresholds_(config.thresholds),
      long_default_(config.long_flow_bytes == 0),
      base_rtt_s_(config.base_rtt_us * 1e-6),
      short_ring_(config.observation.short_finished),
      long_ring_(config.observation.long_finished) {
  long_bytes_ = config.long_flow_bytes;
  if (long_default_)
    long_bytes_ = discipline_ == Discipline::kMlfq && !thresholds_.empty() ? thresholds_.back() : kDefaultLongFlowBytes;
  if (discipline_ == Discipline::kLas) las_ = std::make_unique<LasLink>(topology_.Capacity()[0]);
  single_ = LevelBased() && config.incremental && topology_.Kind() == TopologyKind::kSingleLink;
  for (const TraceFlow& t : config.trace) single_ &= t.cap_gbps == kNoCap;
  clocks_.UseTimers(!single_);  // one group moves at a time: Step asks it directly
  clocks_.Grow(num_link_groups_, 0);
  const size_t links = topology_.NumLinks();
  link_rate_.assign(links, 0.0);
  link_bytes_.assign(links, 0.0);
  link_time_.assign(links, 0.0);
  link_bytes_start_.assign(links, 0.0);
  link_bytes_measured_.assign(links, 0.0);
}

// ------------------------------------------------------------------ levels

uint32_t FlowSim::LevelOfSent(double sent, uint32_t from) const {
  // Demoted from level l once sent >= thresholds[l]: the count of thresholds <= sent (std::upper_bound's
  // answer, NaN included), searched from `from` (the flow's current level, usually at most one step from
  // the answer; a binary search's branches are unpredictable here).
  const uint32_t n = static_cast<uint32_t>(thresholds_.size());
  uint32_t level = std::min(from, n);
  while (level > 0 && sent < thresholds_[level - 1]) --level;
  while (level < n && !(sent < thresholds_[level])) ++level;
  return level;
}

uint32_t FlowSim::LevelOfSize(double size) const {
  // QSJF (AuTO §6): size <= thresholds[0] -> level 0, (thresholds[0], thresholds[1]] -> 1, ...
  return static_cast<uint32_t>(std::lower_bound(thresholds_.begin(), thresholds_.end(), size) - thresholds_.begin());
}

double FlowSim::NextMark(const Flow& f, double sent) const {
  double mark = f.size;
  if (discipline_ == Discipline::kMlfq && !f.pinned && f.level < thresholds_.size())
    mark = std::min(mark, thresholds_[f.level]);
  if (!f.is_long && long_bytes_ > sent) mark = std::min(mark, long_bytes_);
  return mark;
}

double FlowSim::SentOf(uint32_t f) const {
  if (las_) return las_->Attained(f, now_);
  if (clocks_.GroupOf(f) == GroupClocks::kNoGroup) return flows_[f].hold;
  return std::clamp(clocks_.Sent(f, now_), 0.0, flows_[f].size);
}

// ------------------------------------------------------------------ slots

uint32_t FlowSim::NewSlot() {
  uint32_t f;
  if (!free_.empty()) {
    f = free_.back();
    free_.pop_back();
  } else {
    f = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back();
    clocks_.Grow(num_link_groups_ + f + 1, f + 1);
    srpt_key_.emplace_back();
  }
  flows_[f].live = true;
  flows_[f].active_pos = static_cast<uint32_t>(active_.size());
  active_.push_back(f);
  return f;
}

void FlowSim::FreeSlot(uint32_t f) {
  Flow& fl = flows_[f];
  const uint32_t last = active_.back();
  active_[fl.active_pos] = last;
  flows_[last].active_pos = fl.active_pos;
  active_.pop_back();
  fl.live = false;
  ++fl.generation;  // handles of the finished flow no longer resolve
  free_.push_back(f);
  if (active_.empty()) {  // drop what rounding accumulated
    clocks_.ZeroTotalRate();
    unfinished_ = 0;
  }
}

// ------------------------------------------------------------------ running

void FlowSim::RunUntil(double t_s) {
  if (!(t_s >= now_) || !std::isfinite(t_s))
    kernel::Fail("time_s", "must be finite and >= the current time " + kernel::Str(now_) + ", got " + kernel::Str(t_s));
  while (Step(t_s)) {
  }
  Advance(t_s);
}

void FlowSim::RunFor(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds))
    kernel::Fail("seconds", "must be a finite number >= 0, got " + kernel::Str(seconds));
  RunUntil(now_ + seconds);
}

void FlowSim::StepInterval(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds))
    kernel::Fail("seconds", "must be a positive finite number, got " + kernel::Str(seconds));
  StartInterval();
  RunFor(seconds);
}

void FlowSim::RunFlows(uint64_t n) {
  const uint64_t target = counters_.arrived + n;
  while (counters_.arrived < target && Step(kInfinity)) {
  }
}

bool FlowSim::Step(double limit) {
  double ts;
  if (las_) {
    ts = las_->NextTime();
  } else if (single_) {
    ts = served_ < kMaxLevels ? clocks_.GroupNextTime(served_, now_) : kInfinity;
  } else {
    clocks_.Flush(now_);
    ts = clocks_.NextTime();
  }
  const double ta = arrivals_.NextTime(), tc = arrivals_.NextChangeTime();
  if (ts <= ta && ts <= tc) {
    if (!(ts <= limit)) return false;
    Advance(ts);
    Service();
  } else if (tc <= ta) {
    if (!(tc <= limit)) return false;
    Advance(tc);
    arrivals_.ApplyChanges();
  } else {
    if (!(ta <= limit)) return false;
    Advance(ta);
    Arrive();
  }
  ++counters_.events;
  return true;
}

void FlowSim::Advance(double t) {
  if (!(t > now_)) return;
  const double dt = t - now_;
  const double rate = las_ ? las_->TotalRate() : clocks_.TotalRate();
  if (time_avg_.start >= 0) {
    // Unfinished work falls linearly at the total rate between events.
    time_avg_.unfinished_integral += unfinished_ * dt - 0.5 * rate * dt * dt;
    time_avg_.active_integral += static_cast<double>(active_.size()) * dt;
  }
  unfinished_ = std::max(0.0, unfinished_ - rate * dt);
  now_ = t;
}

void FlowSim::Arrive() {
  const Arrival a = arrivals_.Pop();
  const uint32_t f = NewSlot();
  Flow& fl = flows_[f];
  fl.size = a.size;
  fl.arrival = now_;
  fl.index = counters_.arrived++;
  fl.src = a.src;
  fl.dst = a.dst;
  fl.path = a.path;
  fl.route = topology_.Route(a.src, a.dst, a.path);
  fl.cap = a.cap;
  fl.pinned = a.priority >= 0;
  fl.is_long = false;
  double least = kInfinity;
  for (uint32_t h = 0; h < fl.route.hops; ++h) least = std::min(least, topology_.Capacity()[fl.route.link[h]]);
  fl.ideal = fl.size / least;
  counters_.bytes_arrived += fl.size;
  ++interval_.arrived;
  unfinished_ += fl.size;
  if (fl.index == config_.warmup_flows) {
    time_avg_.start = now_;
    // Read without settling: settling would round link_bytes_ differently and move every later observation.
    for (size_t l = 0; l < link_bytes_.size(); ++l)
      link_bytes_measured_[l] = link_bytes_[l] + link_rate_[l] * (now_ - link_time_[l]);
  }

  if (las_) {
    fl.level = 0;
    las_->Add(f, fl.size, now_);
    SettleLink(0, las_->TotalRate());
    return;
  }
  if (discipline_ == Discipline::kSrpt) {
    fl.level = 0;
    fl.mark = NextMark(fl, 0.0);
    clocks_.SetRate(SingletonGroup(f), 0.0, now_);
    clocks_.Join(SingletonGroup(f), f, 0.0, fl.mark, now_);
    ReallocateSrpt();
    return;
  }
  fl.level = fl.pinned                          ? static_cast<uint32_t>(a.priority)
             : discipline_ == Discipline::kQsjf ? LevelOfSize(fl.size)
                                                : 0;
  fl.hold = 0;
  fl.mark = NextMark(fl, 0.0);
  PlaceFlow(f);
  Resolve();
}

void FlowSim::Service() {
  if (las_) {
    const uint32_t f = las_->Step(now_);
    if (f != LasLink::kNone) Complete(f);
    return;
  }
  const uint32_t f = single_ ? clocks_.GroupFirst(served_) : clocks_.NextFlow();
  Flow& fl = flows_[f];
  const uint32_t group = clocks_.GroupOf(f);
  const double sent = fl.mark;  // the flow is exactly at its mark (rounding aside)
  clocks_.Leave(f, now_);
  if (sent >= fl.size) {
    Complete(f);
    return;
  }
  if (!fl.is_long && sent >= long_bytes_) MakeLong(f);
  const uint32_t level = discipline_ == Discipline::kMlfq && !fl.pinned
                             ? std::min(LevelOfSent(sent, fl.level), config_.levels - 1)
                             : fl.level;
  if (level == fl.level) {
    fl.mark = NextMark(fl, sent);
    clocks_.Join(group, f, sent, fl.mark, now_);
    return;
  }
  const uint32_t old = fl.level;  // the next mark is the new level's
  fl.level = level;
  fl.mark = NextMark(fl, sent);
  fl.level = old;
  fl.hold = sent;
  MoveLevel(f, level);
  Resolve();
}

void FlowSim::Complete(uint32_t f) {
  Flow& fl = flows_[f];
  const double fct = now_ - fl.arrival;
  const double reported = fct + base_rtt_s_;
  ++counters_.completed;
  counters_.bytes_completed += fl.size;
  if (fl.index >= config_.warmup_flows &&
      (config_.measure_flows == 0 || fl.index - config_.warmup_flows < config_.measure_flows)) {
    ++counters_.measured;
    counters_.measured_bytes += fl.size;
    hist_.Record(fl.size, fct, reported / (fl.ideal + base_rtt_s_));
  }
  ++interval_.finished;
  interval_.fct_sum_s += reported;
  interval_.throughput_sum_bps += fl.size / reported;
  interval_.bytes_finished += fl.size;
  const FinishedFlow done{static_cast<double>(fl.src),
                          static_cast<double>(fl.dst),
                          static_cast<double>(fl.path),
                          static_cast<double>(fl.level),
                          fl.size,
                          reported,
                          now_};
  if (fl.is_long) {
    ++interval_.long_finished;
    interval_.long_fct_sum_s += reported;
    interval_.long_throughput_sum_bps += fl.size / reported;
    long_ring_.Push(done);
    DropLong(f);
  } else {
    ++interval_.short_finished;
    interval_.short_fct_sum_s += reported;
    short_ring_.Push(done);
  }
  if (config_.record_flows) records_.push_back({fl.index, fl.src, fl.dst, fl.path, fl.level, fl.size, fl.arrival, fct});
  FreeSlot(f);
  if (las_) {
    SettleLink(0, las_->TotalRate());
  } else if (discipline_ == Discipline::kSrpt) {
    ReallocateSrpt();
  } else {
    RemoveFlow(f);
    Resolve();
  }
}

// ------------------------------------------------------------------ rates

void FlowSim::PlaceFlow(uint32_t f) {
  const Flow& fl = flows_[f];
  if (!single_) {
    solver_.Add(f, fl.route, fl.level, fl.cap);
    return;
  }
  if (level_count_[fl.level]++ == 0) levels_held_ |= 1u << fl.level;
  rejoin_.push_back(f);
}

void FlowSim::MoveLevel(uint32_t f, uint32_t level) {
  Flow& fl = flows_[f];
  if (!single_) {
    fl.level = level;
    solver_.SetLevel(f, level);
    return;
  }
  if (--level_count_[fl.level] == 0) levels_held_ &= ~(1u << fl.level);
  if (level_count_[level]++ == 0) levels_held_ |= 1u << level;
  fl.level = level;
  rejoin_.push_back(f);
}

void FlowSim::RemoveFlow(uint32_t f) {
  if (!single_) {
    solver_.Remove(f);
    return;
  }
  const uint32_t level = flows_[f].level;
  if (--level_count_[level] == 0) levels_held_ &= ~(1u << level);
}

void FlowSim::UseSolver() {
  if (!single_) return;
  single_ = false;
  clocks_.UseTimers(true);
  // Every flow enters the solver; the next Resolve moves each to the group the solver gives it.
  for (const uint32_t f : active_) {
    Flow& fl = flows_[f];
    if (clocks_.GroupOf(f) != GroupClocks::kNoGroup) fl.hold = clocks_.Leave(f, now_);
    solver_.Add(f, fl.route, fl.level, fl.cap);
  }
  rejoin_.clear();
}

void FlowSim::Resolve() {
  if (single_) {
    // The highest level holding flows shares the link equally; the others wait.
    const uint32_t served = levels_held_ ? static_cast<uint32_t>(__builtin_ctz(levels_held_)) : kMaxLevels;
    const double capacity = topology_.Capacity()[0];
    if (served != served_ && served_ < kMaxLevels) clocks_.SetRate(served_, 0.0, now_);
    if (served < kMaxLevels) {
      const double share = capacity / level_count_[served];
      if (share != clocks_.Rate(served)) clocks_.SetRate(served, share, now_);
    }
    if ((served < kMaxLevels) != (served_ < kMaxLevels)) SettleLink(0, served < kMaxLevels ? capacity : 0.0);
    served_ = served;
    for (const uint32_t f : rejoin_) clocks_.Join(flows_[f].level, f, flows_[f].hold, flows_[f].mark, now_);
    rejoin_.clear();
    return;
  }
  solver_.Solve();
  const uint32_t links = topology_.NumLinks();
  for (const uint32_t cell : solver_.Reshared()) clocks_.SetRate(cell, solver_.Share(cell / links, cell % links), now_);
  for (const uint32_t f : solver_.Moved()) {
    Flow& fl = flows_[f];
    const uint32_t bottleneck = solver_.Bottleneck(f);
    const double sent = clocks_.GroupOf(f) == GroupClocks::kNoGroup ? fl.hold : clocks_.Leave(f, now_);
    uint32_t group;
    if (bottleneck == RateSolver::kCapLimited) {
      group = SingletonGroup(f);
      clocks_.SetRate(group, fl.cap, now_);
    } else {
      group = fl.level * links + bottleneck;
    }
    clocks_.Join(group, f, sent, fl.mark, now_);
  }
  for (const uint32_t l : solver_.LinksChanged()) SettleLink(l, solver_.LinkRate(l));
}

void FlowSim::ReallocateSrpt() {
  // The order is by remaining bytes at this event (ties by arrival), and it
  // holds until the next arrival or completion: on one link only the first
  // flow is served, so the order cannot change in between.
  order_.assign(active_.begin(), active_.end());
  for (const uint32_t f : order_) srpt_key_[f] = {flows_[f].size - clocks_.Sent(f, now_), flows_[f].index};
  std::sort(order_.begin(), order_.end(), [&](uint32_t a, uint32_t b) { return srpt_key_[a] < srpt_key_[b]; });
  left_ = topology_.Capacity();
  GreedyAllocate(
      order_, left_, [&](uint32_t f) -> const Path& { return flows_[f].route; },
      [&](uint32_t f) { return flows_[f].cap; },
      [&](uint32_t f, double rate) {
        if (clocks_.Rate(SingletonGroup(f)) != rate) clocks_.SetRate(SingletonGroup(f), rate, now_);
      });
  const std::vector<double>& capacity = topology_.Capacity();
  for (uint32_t l = 0; l < capacity.size(); ++l) {
    const double rate = capacity[l] - left_[l];
    if (rate != link_rate_[l]) SettleLink(l, rate);
  }
}

void FlowSim::SettleLink(uint32_t link, double rate) {
  link_bytes_[link] += link_rate_[link] * (now_ - link_time_[link]);
  link_time_[link] = now_;
  link_rate_[link] = rate;
}

// ------------------------------------------------------------------ long flows

void FlowSim::MakeLong(uint32_t f) {
  Flow& fl = flows_[f];
  fl.is_long = true;
  fl.long_prev = long_tail_;
  fl.long_next = kNil;
  if (long_tail_ == kNil)
    long_head_ = f;
  else
    flows_[long_tail_].long_next = f;
  long_tail_ = f;
  ++num_long_;
}

void FlowSim::DropLong(uint32_t f) {
  const Flow& fl = flows_[f];
  if (fl.long_prev == kNil)
    long_head_ = fl.long_next;
  else
    flows_[fl.long_prev].long_next = fl.long_next;
  if (fl.long_next == kNil)
    long_tail_ = fl.long_prev;
  else
    flows_[fl.long_next].long_prev = fl.long_prev;
  --num_long_;
}

double FlowSim::MeanUnfinished() const {
  const double t = MeasuredTime();
  return t > 0 ? time_avg_.unfinished_integral / t : std::nan("");
}

double FlowSim::MeanActive() const {
  const double t = MeasuredTime();
  return t > 0 ? time_avg_.active_integral / t : std::nan("");
}

}  // namespace dcgym::flow
