// FlowSim: the agents' interface (actions, observations, intervals) and the
// batch stepper.
#include <algorithm>
#include <cmath>
#include <exception>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dcgym/flow/flow_sim.hpp"
#include "dcgym/kernel/check.hpp"

namespace dcgym::flow {

using kernel::Fail;
using kernel::Str;

namespace {

const char* DisciplineName(Discipline d) {
  switch (d) {
    case Discipline::kFair: return "fair";
    case Discipline::kQsjf: return "qsjf";
    case Discipline::kMlfq: return "mlfq";
    case Discipline::kLas: return "las";
    case Discipline::kSrpt: return "srpt";
  }
  return "";
}
}  // namespace

void FlowSim::StartInterval() {
  interval_ = IntervalStats{};
  interval_.start_s = now_;
  for (uint32_t l = 0; l < link_bytes_.size(); ++l) {
    SettleLink(l, link_rate_[l]);
    link_bytes_start_[l] = link_bytes_[l];
  }
}

// ------------------------------------------------------------------ actions

void FlowSim::SetThresholds(const std::vector<double>& bytes) {
  if (discipline_ != Discipline::kMlfq && discipline_ != Discipline::kQsjf)
    Fail("thresholds", std::string("discipline '") + DisciplineName(discipline_) + "' has no thresholds");
  if (bytes.size() != thresholds_.size())
    Fail("thresholds", "needs levels - 1 = " + Str(thresholds_.size()) + " values, got " + Str(bytes.size()));
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!(bytes[i] > 0) || !std::isfinite(bytes[i]))
      Fail("thresholds[" + Str(i) + "]", "must be a positive finite number of bytes, got " + Str(bytes[i]));
    if (i > 0 && bytes[i] < bytes[i - 1])
      Fail("thresholds[" + Str(i) + "]",
           "must be >= thresholds[" + Str(i - 1) + "] = " + Str(bytes[i - 1]) + ", got " + Str(bytes[i]));
  }
  thresholds_ = bytes;
  if (long_default_ && discipline_ == Discipline::kMlfq && !thresholds_.empty()) long_bytes_ = thresholds_.back();
  // One sweep: each flow takes its level under the new thresholds.
  const std::vector<uint32_t> active = active_;
  for (const uint32_t f : active) {
    Flow& fl = flows_[f];
    const double sent = SentOf(f);
    if (!fl.is_long && sent >= long_bytes_) MakeLong(f);
    uint32_t level = fl.level;
    if (!fl.pinned) level = discipline_ == Discipline::kMlfq ? LevelOfSent(sent) : LevelOfSize(fl.size);
    if (level != fl.level) {
      fl.hold = clocks_.Leave(f, now_);
      const uint32_t old = fl.level;
      fl.level = level;
      fl.mark = NextMark(fl, fl.hold);
      fl.level = old;
      MoveLevel(f, level);
    } else {
      const double mark = NextMark(fl, sent);
      if (mark != fl.mark) {
        fl.mark = mark;
        clocks_.SetMark(f, mark, now_);
      }
    }
  }
  Resolve();
}

uint32_t FlowSim::SlotOf(uint64_t handle, const std::string& field) const {
  const uint64_t slot = handle & 0xffffffffu;
  if (slot >= flows_.size() || !flows_[slot].live || flows_[slot].generation != (handle >> 32))
    Fail(field, "flow " + Str(handle) + " is not an active flow (finished, or never reported)");
  return static_cast<uint32_t>(slot);
}

void FlowSim::SetFlowActions(const std::vector<FlowAction>& actions) {
  if (!LevelBased() && !actions.empty())
    Fail("actions", std::string("discipline '") + DisciplineName(discipline_) + "' takes no per-flow actions");
  for (size_t i = 0; i < actions.size(); ++i) {  // check everything before changing anything
    const FlowAction& a = actions[i];
    const std::string field = "actions[" + Str(i) + "]";
    const uint32_t f = SlotOf(a.flow, field + ".flow");
    if (a.level < -1 || a.level >= static_cast<int32_t>(config_.levels))
      Fail(field + ".level", "must be in [0, " + Str(config_.levels - 1) + "] or -1 (keep), got " + Str(a.level));
    if (std::isnan(a.cap_gbps)) Fail(field + ".cap_gbps", "must be a number (< 0 keeps the cap, inf removes it)");
    const uint32_t paths = topology_.NumPaths(flows_[f].src, flows_[f].dst);
    if (a.path < -1 || a.path >= static_cast<int32_t>(paths))
      Fail(field + ".path", "must be in [0, " + Str(paths - 1) + "] or -1 (keep), got " + Str(a.path));
  }
  for (const FlowAction& a : actions)
    if (a.cap_gbps >= 0) UseSolver();  // caps need the general allocation
  for (const FlowAction& a : actions) {
    const uint32_t f = static_cast<uint32_t>(a.flow & 0xffffffffu);
    Flow& fl = flows_[f];
    const uint32_t level = a.level >= 0 ? static_cast<uint32_t>(a.level) : fl.level;
    const double cap = a.cap_gbps < 0 ? fl.cap : std::isinf(a.cap_gbps) ? kNoCap : BytesPerSecond(a.cap_gbps);
    const uint32_t path = a.path >= 0 ? static_cast<uint32_t>(a.path) : fl.path;
    fl.pinned |= a.level >= 0;
    if (level == fl.level && cap == fl.cap && path == fl.path) {
      // Nothing moves; pinning may still remove an MLFQ mark.
      const double sent = SentOf(f);
      const double mark = NextMark(fl, sent);
      if (mark != fl.mark) {
        fl.mark = mark;
        if (clocks_.GroupOf(f) != GroupClocks::kNoGroup) clocks_.SetMark(f, mark, now_);
      }
      continue;
    }
    if (clocks_.GroupOf(f) != GroupClocks::kNoGroup) fl.hold = clocks_.Leave(f, now_);
    if (path != fl.path) {
      fl.path = path;
      fl.route = topology_.Route(fl.src, fl.dst, path);
      solver_.SetPath(f, fl.route);
    }
    if (cap != fl.cap) {
      fl.cap = cap;
      solver_.SetCap(f, cap);
    }
    if (level != fl.level) MoveLevel(f, level);
    fl.mark = NextMark(fl, fl.hold);
  }
  Resolve();
}

uint64_t FlowSim::BalancePaths(double long_bytes, uint64_t max_flows, int32_t level) {
  if (!(long_bytes >= 0) || !std::isfinite(long_bytes))
    Fail("long_bytes", "must be a finite number of bytes >= 0, got " + Str(long_bytes));
  if (level < -1 || level >= static_cast<int32_t>(config_.levels))
    Fail("level", "must be in [0, " + Str(config_.levels - 1) + "] or -1 (keep), got " + Str(level));
  if (!LevelBased()) Fail("pathbal", std::string("needs a level-based discipline, not ") + DisciplineName(discipline_));
  std::vector<double> bytes = LinkLevelBytes();
  std::vector<std::pair<double, uint32_t>> moving;  // (arrival, slot) of the long flows
  for (const uint32_t f : active_) {
    const Flow& fl = flows_[f];
    if (SentOf(f) >= long_bytes && topology_.NumPaths(fl.src, fl.dst) > 1) moving.emplace_back(fl.arrival, f);
  }
  std::sort(moving.begin(), moving.end());
  if (max_flows > 0 && moving.size() > max_flows) moving.resize(max_flows);
  std::vector<FlowAction> actions;
  uint64_t moved = 0;
  for (const auto& [arrival, f] : moving) {
    const Flow& fl = flows_[f];
    const double left = fl.size - SentOf(f);
    const uint32_t at = level >= 0 ? static_cast<uint32_t>(level) : fl.level;  // its level once moved
    const auto cost = [&](const Path& p) { return PathCost(bytes, p, at); };
    AddPathBytes(bytes, fl.route, fl.level, -left);
    uint32_t best = fl.path;
    double least = cost(fl.route);
    for (uint32_t q = 0; q < topology_.NumPaths(fl.src, fl.dst); ++q) {
      const double c = cost(topology_.Route(fl.src, fl.dst, q));
      if (c < least) least = c, best = q;
    }
    AddPathBytes(bytes, topology_.Route(fl.src, fl.dst, best), at, left);
    moved += best != fl.path;
    if (best != fl.path || level >= 0)
      actions.push_back({Handle(f), level, -1.0, best != fl.path ? static_cast<int32_t>(best) : -1});
  }
  SetFlowActions(actions);
  return moved;
}

uint64_t FlowSim::CheckMoves(std::vector<FlowAction>& actions) const {
  if (!LevelBased()) return 0;
  const uint32_t levels = config_.levels;
  std::vector<double> bytes = LinkLevelBytes();
  uint64_t dropped = 0;
  for (size_t i = 0; i < actions.size(); ++i) {
    FlowAction& a = actions[i];
    const uint32_t f = SlotOf(a.flow, "actions[" + Str(i) + "].flow");
    const Flow& fl = flows_[f];
    const double left = fl.size - SentOf(f);
    const uint32_t at =
        a.level >= 0 && a.level < static_cast<int32_t>(levels) ? static_cast<uint32_t>(a.level) : fl.level;
    AddPathBytes(bytes, fl.route, fl.level, -left);
    Path route = fl.route;
    if (a.path >= 0 && static_cast<uint32_t>(a.path) != fl.path &&
        static_cast<uint32_t>(a.path) < topology_.NumPaths(fl.src, fl.dst)) {
      const Path moved = topology_.Route(fl.src, fl.dst, static_cast<uint32_t>(a.path));
      if (PathCost(bytes, moved, at) < PathCost(bytes, fl.route, at)) {
        route = moved;
      } else {
        a.path = -1;
        ++dropped;
      }
    }
    AddPathBytes(bytes, route, at, left);
  }
  return dropped;
}

std::vector<double> FlowSim::LinkLevelBytes() const {
  // A flow at level L is held back by the bytes at levels 0..L on its links (strict priority), not by the larger
  // flows below it.
  const uint32_t levels = config_.levels;
  std::vector<double> bytes(size_t{topology_.NumLinks()} * levels, 0.0);
  for (const uint32_t f : active_) {
    const Flow& fl = flows_[f];
    AddPathBytes(bytes, fl.route, fl.level, fl.size - SentOf(f));
  }
  return bytes;
}

void FlowSim::AddPathBytes(std::vector<double>& bytes, const Path& p, uint32_t level, double b) const {
  for (uint32_t h = 0; h < p.hops; ++h) bytes[size_t{p.link[h]} * config_.levels + level] += b;
}

double FlowSim::PathCost(const std::vector<double>& bytes, const Path& p, uint32_t at) const {
  double c = 0;
  for (uint32_t h = 0; h < p.hops; ++h)
    for (uint32_t l = 0; l <= at; ++l) c += bytes[size_t{p.link[h]} * config_.levels + l];
  return c;
}

void FlowSim::ObservePathCosts(const int64_t* flows, uint32_t rows, uint32_t paths, double* out, int32_t level) const {
  if (level < -1 || level >= static_cast<int32_t>(config_.levels))
    Fail("level", "must be in [0, " + Str(config_.levels - 1) + "] or -1 (each flow's own), got " + Str(level));
  std::fill(out, out + size_t{rows} * paths, -1.0);
  if (!LevelBased()) return;
  std::vector<double> bytes = LinkLevelBytes();
  for (uint32_t i = 0; i < rows; ++i) {
    if (flows[i] < 0) continue;
    const uint32_t f = SlotOf(static_cast<uint64_t>(flows[i]), "flows[" + Str(i) + "]");
    const Flow& fl = flows_[f];
    const double left = fl.size - SentOf(f);
    AddPathBytes(bytes, fl.route, fl.level, -left);  // the other flows' bytes, as pathbal counts them
    const uint32_t n = std::min(paths, topology_.NumPaths(fl.src, fl.dst));
    for (uint32_t q = 0; q < n; ++q)
      out[size_t{i} * paths + q] =
          PathCost(bytes, topology_.Route(fl.src, fl.dst, q), level >= 0 ? static_cast<uint32_t>(level) : fl.level);
    AddPathBytes(bytes, fl.route, fl.level, left);
  }
}

// ------------------------------------------------------------------ observations

namespace {
void WriteFinished(const FinishedRing& ring, uint64_t in_interval, double now, double* out) {
  const uint32_t rows = ring.Capacity();
  std::fill(out, out + size_t{rows} * kFinishedFeatures, 0.0);
  const uint64_t n = std::min<uint64_t>({rows, in_interval, ring.Count()});
  for (uint64_t i = 0; i < n; ++i) {
    const FinishedFlow& f = ring.Recent(i);
    double* row = out + i * kFinishedFeatures;
    row[0] = f.src;
    row[1] = f.dst;
    row[2] = f.path;
    row[3] = f.level;
    row[4] = f.size;
    row[5] = f.fct;
    row[6] = now - f.finish;
  }
}
}  // namespace

void FlowSim::ObserveShortFinished(double* out) const {
  WriteFinished(short_ring_, interval_.short_finished, now_, out);
}

void FlowSim::ObserveLongFinished(double* out) const { WriteFinished(long_ring_, interval_.long_finished, now_, out); }

void FlowSim::ObserveLongActive(double* out, int64_t* flows) const {
  const uint32_t rows = config_.observation.long_active;
  std::fill(out, out + size_t{rows} * kActiveFeatures, 0.0);
  std::fill(flows, flows + rows, int64_t{-1});
  uint32_t i = 0;
  for (uint32_t f = long_head_; f != kNil && i < rows; f = flows_[f].long_next, ++i) {
    const Flow& fl = flows_[f];
    double* row = out + size_t{i} * kActiveFeatures;
    row[0] = fl.src;
    row[1] = fl.dst;
    row[2] = fl.path;
    row[3] = fl.level;
    row[4] = SentOf(f);
    row[5] = now_ - fl.arrival;
    flows[i] = static_cast<int64_t>(Handle(f));
  }
}

void FlowSim::ListActive(std::vector<ActiveFlow>& out) const {
  out.clear();
  std::vector<uint32_t> slots = active_;
  std::sort(slots.begin(), slots.end());
  for (const uint32_t f : slots) {
    const Flow& fl = flows_[f];
    const double rate = las_ ? las_->RateOf(f) : clocks_.RateOf(f);
    out.push_back({Handle(f), fl.index, fl.src, fl.dst, fl.path, fl.level, fl.size, SentOf(f), rate, fl.arrival,
                   fl.pinned, fl.is_long});
  }
}

void FlowSim::LevelOccupancy(double* flows, double* bytes) const {
  std::fill(flows, flows + config_.levels, 0.0);
  std::fill(bytes, bytes + config_.levels, 0.0);
  for (const uint32_t f : active_) {
    flows[flows_[f].level] += 1;
    bytes[flows_[f].level] += flows_[f].size - SentOf(f);
  }
}

void FlowSim::LinkUtilization(double* interval, double* now) const {
  const double span = now_ - interval_.start_s;
  const std::vector<double>& capacity = topology_.Capacity();
  for (size_t l = 0; l < capacity.size(); ++l) {
    const double bytes = link_bytes_[l] + link_rate_[l] * (now_ - link_time_[l]) - link_bytes_start_[l];
    interval[l] = span > 0 && capacity[l] > 0 ? bytes / (capacity[l] * span) : 0.0;
    now[l] = capacity[l] > 0 ? link_rate_[l] / capacity[l] : 0.0;
  }
}

void FlowSim::MeasuredLinkUtilization(double* out) const {
  const double span = MeasuredTime();
  const std::vector<double>& capacity = topology_.Capacity();
  for (size_t l = 0; l < capacity.size(); ++l) {
    const double bytes = link_bytes_[l] + link_rate_[l] * (now_ - link_time_[l]) - link_bytes_measured_[l];
    out[l] = span > 0 && capacity[l] > 0 ? bytes / (capacity[l] * span) : 0.0;
  }
}

// ------------------------------------------------------------------ batch

void CheckBatch(const std::vector<const void*>& items, const char* what, uint32_t threads) {
  if (threads < 1) Fail("threads", "must be >= 1, got " + Str(threads));
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string field = std::string(what) + "[" + Str(i) + "]";
    if (items[i] == nullptr) Fail(field, "None");
    for (size_t j = 0; j < i; ++j)
      if (items[j] == items[i]) Fail(field, "the same as " + std::string(what) + "[" + Str(j) + "]");
  }
}

void StepBatch(const std::vector<FlowSim*>& sims, double seconds, uint32_t threads) {
  CheckBatch({sims.begin(), sims.end()}, "sims", threads);  // StepInterval checks `seconds`, changing nothing
  threads = std::max<uint32_t>(1, std::min<uint32_t>(threads, static_cast<uint32_t>(sims.size())));
  if (threads <= 1) {
    for (FlowSim* s : sims) s->StepInterval(seconds);
    return;
  }
  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::thread> pool;
  for (uint32_t k = 0; k < threads; ++k)
    pool.emplace_back([&, k] {
      try {
        for (size_t i = k; i < sims.size(); i += threads) sims[i]->StepInterval(seconds);
      } catch (...) {
        errors[k] = std::current_exception();
      }
    });
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace dcgym::flow
