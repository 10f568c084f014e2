#include "dcgym/rack/rack_sim.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "dcgym/kernel/check.hpp"
#include "dcgym/rack/water_fill.hpp"

namespace dcgym::rack {

using kernel::Stream;

namespace {

constexpr uint32_t kNotIdle = UINT32_MAX;

std::vector<double> NodeRates(const RackConfig& c) {
  std::vector<double> r;
  for (const auto& g : c.groups)
    for (uint32_t k = 0; k < g.count; ++k) r.push_back(c.dispatch.sed_by_speed ? g.workers * g.speed : g.workers);
  return r;
}

DispatchConfig WithDefaultWeights(const RackConfig& c) {
  DispatchConfig d = c.dispatch;
  if (d.kind == DispatchKind::kWcmp && d.weights.empty())
    for (const auto& g : c.groups)
      for (uint32_t k = 0; k < g.count; ++k) d.weights.push_back(g.workers * g.speed);
  return d;
}

std::vector<LoadBoard> MakeBoards(const RackConfig& c, uint32_t viewers) {
  const size_t count = c.dispatch.per_type ? c.types.size() : 1;
  return std::vector<LoadBoard>(count,
                                LoadBoard(c.load_info, viewers, c.NumNodes(), c.entry.kind == EntryKind::kNodes));
}

uint32_t ViewersOf(const RackConfig& c) {
  switch (c.entry.kind) {
    case EntryKind::kBalancers: return c.entry.count;
    case EntryKind::kNodes: return c.NumNodes();
    default: return 1;
  }
}

}  // namespace

void DecisionCounts::Reset() {
  std::fill(migrate.begin(), migrate.end(), 0);
  std::fill(steal.begin(), steal.end(), 0);
  std::fill(migrations.begin(), migrations.end(), 0);
  std::fill(steals.begin(), steals.end(), 0);
  std::fill(failed_steals.begin(), failed_steals.end(), 0);
  std::fill(dropped.begin(), dropped.end(), 0);
  std::fill(completed.begin(), completed.end(), 0);
}

RackSim::RackSim(const RackConfig& config)
    : config_((config.Validate(), config)),
      node_events_(config.NumNodes()),
      types_(config.EffectiveTypes()),
      typed_(!config.types.empty()),
      num_classes_(typed_ ? static_cast<uint32_t>(config.types.size()) : config.service.NumClasses()),
      boards_(MakeBoards(config, ViewersOf(config))),
      dispatcher_(WithDefaultWeights(config), NodeRates(config), ViewersOf(config),
                  kernel::MakeRng(config.seed, Stream::kDispatch)),
      entry_(config.entry.kind),
      policy_(config.dispatch.kind),
      per_class_(num_classes_ > 1),
      arrival_rng_(kernel::MakeRng(config.seed, Stream::kArrivals)),
      service_rng_(kernel::MakeRng(config.seed, Stream::kService)),
      entry_rng_(kernel::MakeRng(config.seed, Stream::kArrivals, 1)),
      table_rng_(kernel::MakeRng(config.seed, Stream::kPolicy)),
      central_rng_(kernel::MakeRng(config.seed, Stream::kDispatch, 1)),
      node_counters_(config.NumNodes()),
      latency_by_class_(per_class_ ? num_classes_ : 0) {
  const uint32_t n = config.NumNodes();
  nodes_.reserve(n);
  for (const auto& g : config.groups)
    for (uint32_t k = 0; k < g.count; ++k) {
      nodes_.emplace_back(g, config.intra, types_, config.MeanSize(), &starts_,
                          config.dispatch.metric == LoadMetric::kExpectedWait);
      workers_of_.push_back(g.workers);
    }
  table_ = entry_ == EntryKind::kNodes && (policy_ == DispatchKind::kTable || policy_ == DispatchKind::kWaterFill);
  const LoadBoard& board = boards_[0];
  needs_replies_ = board.UsesReplies() || policy_ == DispatchKind::kLsq || policy_ == DispatchKind::kJbsq;
  local_counts_ = policy_ == DispatchKind::kLsq || policy_ == DispatchKind::kJbsq;
  track_truth_ = dispatcher_.ReadsLoads() || board.Kind() != LoadInfoKind::kFresh || table_;
  if (local_counts_) local_count_.assign(static_cast<size_t>(board.NumViewers()) * n, 0.0);
  if (typed_) {
    double c = 0;
    for (const auto& t : types_) type_cum_.push_back(c += t.share);
    for (auto& x : type_cum_) x /= c;
    type_cum_.back() = 1.0;
  }

  is_active_.assign(n, 1);
  for (uint32_t i = 0; i < n; ++i) active_.push_back(i);
  RebuildSplit();
  RebuildCandidates();

  if (entry_ == EntryKind::kNodes) {  // only load managers take decisions
    decisions_.n = n;
    decisions_.migrate.assign(static_cast<size_t>(n) * n, 0);
    decisions_.steal.assign(static_cast<size_t>(n) * n, 0);
    decisions_.migrations.assign(n, 0);
    decisions_.steals.assign(n, 0);
    decisions_.failed_steals.assign(n, 0);
    decisions_.dropped.assign(n, 0);
    decisions_.completed.assign(n, 0);
  }
  if (table_) {
    // Until told otherwise every node accepts every task and never steals.
    migrate_cum_.assign(static_cast<size_t>(n) * n, 0.0);
    steal_cum_.assign(static_cast<size_t>(n) * n, 0.0);
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t j = i; j < n; ++j) migrate_cum_[i * n + j] = steal_cum_[i * n + j] = 1.0;
    queue_ema_.assign(n, 0.0);
  }

  mean_size_ = config.MeanSize();
  rate_ = config.load * config.Capacity() / mean_size_;
  next_arrival_ = arrival_rng_.Exp1() / rate_;

  if (policy_ == DispatchKind::kCentralFcfs) BuildSpeedClasses();
  if (board.Kind() == LoadInfoKind::kPeriodic) Schedule(config.load_info.period_us, Message(Message::kBroadcast));
  for (uint32_t k = 0; k < config.dynamics.size(); ++k) {
    Message m(Message::kDynamics);
    m.a = k;
    Schedule(config.dynamics[k].at_us, m);
  }
  if (config.sample_period_us > 0) Schedule(config.sample_period_us, Message(Message::kSample));
  if (policy_ == DispatchKind::kWaterFill) {
    WaterFillTables();
    Schedule(config.dispatch.period_us, Message(Message::kRefresh));
  }
}

// ---------------------------------------------------------------- event loop

// RunTasks and RunUntil are flattened: the hot path (arrival, dispatch, placement, completion) is inlined into one
// loop. What runs rarely or only under one policy (messages, steals, dynamics, water-fill tables, central FCFS and
// JBSQ bookkeeping, delayed replies) is kept out of it with [[gnu::noinline]]: inlined, it made each loop about
// 280 KB of code and this file about 4 minutes to compile, and it ran slower (benchmarks/engine_speed.py).

template <bool kUntil>
void RackSim::Loop(uint64_t target_arrivals, double horizon) {
  const bool single = nodes_.size() == 1;  // one node: no heap over nodes to consult
  for (;;) {
    const double t_node = single ? nodes_[0].NextEventTime() : node_events_.TopKey();
    const double t_msg = messages_.TopTime();
    if (next_arrival_ <= t_node && next_arrival_ <= t_msg) {
      if (kUntil ? next_arrival_ > horizon : counters_.arrived >= target_arrivals) return;
      now_ = next_arrival_;
      OnArrival();
    } else if (t_node <= t_msg) {
      if (kUntil && t_node > horizon) return;
      now_ = t_node;
      OnNodeEvent(single ? 0 : node_events_.Top());
    } else {
      if (kUntil && t_msg > horizon) return;
      now_ = t_msg;
      OnMessage(messages_.Pop().payload);
    }
  }
}

[[gnu::flatten]] void RackSim::RunTasks(uint64_t n) { Loop<false>(counters_.arrived + n, 0.0); }

[[gnu::flatten]] void RackSim::RunUntil(double t_us) {
  if (!(t_us >= now_) || !std::isfinite(t_us))
    throw std::invalid_argument("time_us: must be finite and >= the current time " + kernel::Str(now_) + ", got " +
                                kernel::Str(t_us));
  Loop<true>(0, t_us);
  now_ = t_us;
}

void RackSim::OnArrival() {
  ++counters_.events;
  uint32_t type = 0;
  if (typed_) type = SampleCumulative(type_cum_.data(), static_cast<uint32_t>(type_cum_.size()), service_rng_);
  const kernel::Sample s = types_[type].service.Draw(service_rng_);
  Task t;
  t.arrival = now_;
  t.work = t.size = s.value;
  t.cls = static_cast<uint16_t>(typed_ ? type : s.cls);
  if (counters_.arrived < config_.warmup_tasks) {
    t.flags = Task::kWarmup;
    ++counters_.warmup;
  } else if (config_.measure_tasks > 0 && counters_.arrived - config_.warmup_tasks >= config_.measure_tasks) {
    t.flags = Task::kWarmup;  // past the measured window: served like any task, left out of every statistic
  } else if (config_.record_tasks) {
    record_arrival_.push_back(t.arrival);
    record_size_.push_back(t.size);
  }
  ++counters_.arrived;
  next_arrival_ = now_ + arrival_rng_.Exp1() / rate_;

  switch (entry_) {
    case EntryKind::kSwitch: return Dispatch(0, t);
    case EntryKind::kBalancers:
      return Dispatch(SampleCumulative(split_cum_.data(), static_cast<uint32_t>(split_cum_.size()), entry_rng_), t);
    case EntryKind::kNodes: {
      const uint32_t k =
          split_cum_.empty()
              ? (active_.size() == 1 ? 0 : entry_rng_.Below(static_cast<uint32_t>(active_.size())))
              : SampleCumulative(split_cum_.data(), static_cast<uint32_t>(split_cum_.size()), entry_rng_);
      uint32_t i = active_[k];
      if (typed_) {  // a client only sends a task to a node that may run its type
        const auto& allowed = candidates_[t.cls];
        if (!std::binary_search(allowed.begin(), allowed.end(), i))
          i = allowed[entry_rng_.Below(static_cast<uint32_t>(allowed.size()))];
      }
      return ArriveAtNode(i, t);
    }
  }
}

void RackSim::Dispatch(uint32_t viewer, Task t) {
  t.origin = viewer;
  const std::vector<uint32_t>& candidates = candidates_[typed_ ? t.cls : 0];
  switch (policy_) {
    case DispatchKind::kCentralFcfs:
      if (!CentralPlace(t)) dispatcher_queue_.PushBack(t);
      return;
    case DispatchKind::kJbsq: {
      // The shortest queue (per worker) among nodes below their bound, else wait here.
      const uint32_t n = NumNodes();
      uint32_t best = 0, ties = 0;
      double best_count = 0;
      for (uint32_t j : candidates) {
        const double c = local_count_[viewer * n + j] / workers_of_[j];
        if (c >= config_.dispatch.bound) continue;
        if (ties == 0 || c < best_count) {
          best = j;
          best_count = c;
          ties = 1;
        } else if (c == best_count && central_rng_.Below(++ties) == 0) {
          best = j;
        }
      }
      if (ties == 0)
        dispatcher_queue_.PushBack(t);
      else
        Send(viewer, best, t);
      return;
    }
    default: return Send(viewer, Choose(viewer, t), t);
  }
}

// The dispatcher's pick for task t among the nodes that may run it.
uint32_t RackSim::Choose(uint32_t viewer, const Task& t) {
  const uint32_t type = typed_ ? t.cls : 0;
  const std::vector<uint32_t>& candidates = candidates_[type];
  const LoadBoard& board = BoardOf(t);
  switch (policy_) {
    case DispatchKind::kLsq: {
      const double* counts = &local_count_[static_cast<size_t>(viewer) * NumNodes()];
      return dispatcher_.Pick(viewer, type, candidates, [counts](uint32_t j) { return counts[j]; }, t.size);
    }
    case DispatchKind::kOracle:
      return dispatcher_.Pick(
          viewer, type, candidates, [this](uint32_t j) { return nodes_[j].RemainingWork(now_); }, t.size);
    default:
      if (board.Kind() == LoadInfoKind::kFresh) {  // the common case, without the board's indirection
        const double* truth = board.Truths().data();
        return dispatcher_.Pick(viewer, type, candidates, [truth](uint32_t j) { return truth[j]; }, t.size);
      }
      return dispatcher_.Pick(
          viewer, type, candidates, [&board, viewer](uint32_t j) { return board.Belief(viewer, j); }, t.size);
  }
}

void RackSim::Send(uint32_t viewer, uint32_t j, Task t) {
  t.origin = viewer;
  if (track_truth_) BoardOf(t).OnSend(viewer, j, LoadIncrement(j, t));
  if (local_counts_) local_count_[static_cast<size_t>(viewer) * NumNodes() + j] += 1;
  Place(j, t);
}

// Malcolm §3.2: the load manager of node i accepts the task or migrates it.
void RackSim::ArriveAtNode(uint32_t i, Task t) {
  t.origin = i;
  uint32_t j = i;
  const std::vector<uint32_t>& candidates = candidates_[typed_ ? t.cls : 0];
  switch (policy_) {
    case DispatchKind::kRandom:  // clients already chose the node at random (Malcolm's RAND)
      break;
    case DispatchKind::kWaterFill:
      if (config_.dispatch.per_task) WaterFillRow(i, false);
      [[fallthrough]];
    case DispatchKind::kTable:
      if (arrival_refresh_) arrival_refresh_(i);
      j = SampleCumulative(&migrate_cum_[static_cast<size_t>(i) * NumNodes()], NumNodes(), table_rng_);
      if (!std::binary_search(candidates.begin(), candidates.end(), j)) j = i;  // not allowed: keep it
      if (arrival_decided_) arrival_decided_(i, j);
      break;
    default: j = Choose(i, t); break;
  }
  ++decisions_.migrate[static_cast<size_t>(i) * NumNodes() + j];
  if (j != i) return Migrate(i, j, t);
  if (local_counts_) local_count_[static_cast<size_t>(i) * NumNodes() + i] += 1;
  Place(i, t);
}

void RackSim::Migrate(uint32_t from, uint32_t to, Task t) {
  ++counters_.migrations;
  ++decisions_.migrations[from];
  ++node_counters_[from].migrated_out;
  if (track_truth_) BoardOf(t).OnSend(from, to, LoadIncrement(to, t));
  if (local_counts_) local_count_[static_cast<size_t>(from) * NumNodes() + to] += 1;
  if (config_.migration.delay_us <= 0) return Place(to, t);
  Message m(Message::kDeliver);
  m.a = to;
  m.task = t;
  Schedule(now_ + config_.migration.delay_us, m);
}

void RackSim::Place(uint32_t i, const Task& t) {
  if (!nodes_[i].Admit(t, now_)) {
    ++counters_.dropped;
    ++node_counters_[i].dropped;
    if (!(t.flags & Task::kWarmup)) ++measured_done_;
    if (entry_ == EntryKind::kNodes) ++decisions_.dropped[i];
    if (needs_replies_) Reply(t.origin, i, t);  // the refusal is a reply
    return;
  }
  AfterChange(i);
}

void RackSim::OnNodeEvent(uint32_t i) {
  ++counters_.events;
  Task done;
  const bool completed = nodes_[i].HandleEvent(now_, &done);
  if (policy_ == DispatchKind::kCentralFcfs) CentralRefill(i);
  AfterChange(i);
  if (completed) Complete(i, done);
}

void RackSim::Complete(uint32_t i, const Task& t) {
  ++counters_.completed;
  ++node_counters_[i].completed;
  if (entry_ == EntryKind::kNodes) ++decisions_.completed[i];
  if (step_latency_on_) step_latency_.Record(now_ - t.arrival);
  if (window_latency_on_) window_latency_.Record(now_ - t.arrival);
  if (!(t.flags & Task::kWarmup)) {
    ++measured_done_;
    const double latency = now_ - t.arrival;
    latency_.Record(latency);
    if (per_class_) latency_by_class_[t.cls].Record(latency);
  }
  if (needs_replies_) Reply(t.origin, i, t);
  if (table_ && is_active_[i]) MaybeSteal(i);
}

// The reply for task t, done (or refused) at node i, carries i's load to the
// dispatcher that placed it.
[[gnu::noinline]] void RackSim::Reply(uint32_t viewer, uint32_t i, const Task& t) {
  const double load = LoadOf(i, t.cls);
  const double delay = config_.load_info.delay_us;
  if (delay > 0) {
    Message m(Message::kReply);
    m.a = viewer;
    m.b = i;
    m.value = load;
    m.task.cls = t.cls;
    return Schedule(now_ + delay, m);
  }
  BoardOf(t).OnReply(viewer, i, load);
  if (local_counts_) {
    local_count_[static_cast<size_t>(viewer) * NumNodes() + i] -= 1;
    if (policy_ == DispatchKind::kJbsq) JbsqRefill(i);
  }
}

// Malcolm §3.2: after a completion, a node whose smoothed queue is short may
// ask a victim drawn from its stealing table for one queued task.
[[gnu::noinline]] void RackSim::MaybeSteal(uint32_t i) {
  const double w = config_.migration.queue_smoothing;
  queue_ema_[i] = w * queue_ema_[i] + (1 - w) * nodes_[i].Queued();
  if (!(queue_ema_[i] < config_.migration.steal_below)) return;
  const uint32_t victim = SampleCumulative(&steal_cum_[static_cast<size_t>(i) * NumNodes()], NumNodes(), table_rng_);
  ++decisions_.steal[static_cast<size_t>(i) * NumNodes() + victim];
  if (victim == i) return;
  Message m(Message::kStealRequest);
  m.a = i;
  m.b = victim;
  if (config_.migration.delay_us > 0)
    Schedule(now_ + config_.migration.delay_us, m);
  else
    OnMessage(m);
}

// water_fill: what Malcolm's agents do every heartbeat, by a fixed rule. Node i sees its beliefs (stale by up to a
// broadcast period, plus its own sends) as levels in mean service times, the expected_wait observation of rack_v0.
[[gnu::noinline]] void RackSim::WaterFillTables() {
  const uint32_t n = NumNodes();
  fill_level_.resize(n);
  fill_capacity_.resize(n);
  fill_row_.resize(n);
  for (uint32_t j = 0; j < n; ++j) fill_capacity_[j] = nodes_[j].Workers() * nodes_[j].Speed();
  for (uint32_t i = 0; i < n; ++i) WaterFillRow(i, true);
}

// Node i's migration table from what it believes now (and, with `steal_row`, its stealing table). With per_task the
// arrival path calls it for the arriving node's migration table, whose beliefs then include its sends so far.
[[gnu::noinline]] void RackSim::WaterFillRow(uint32_t i, bool steal_row) {
  const uint32_t n = NumNodes();
  const DispatchConfig& d = config_.dispatch;
  const double volume = d.horizon * rate_ * d.period_us;  // the rack's arrivals in `horizon` heartbeats
  const double to_level = 1.0 / config_.MeanSize();       // expected wait (us) -> mean service times
  BeliefRow(i, fill_level_.data());
  for (uint32_t j = 0; j < n; ++j) fill_level_[j] *= to_level;
  std::fill(fill_row_.begin(), fill_row_.end(), 0.0);
  WaterFillTable(fill_level_.data(), fill_capacity_.data(), active_, volume, d.mix, fill_order_, fill_row_.data());
  SetTableWeights(i, false, fill_row_.data(), 1.0);
  if (!steal_row) return;
  // Steal rule: a node that runs short asks the node it believes most loaded, if above its own level.
  uint32_t victim = i;
  if (d.steal)
    for (uint32_t j : active_)
      if (fill_level_[j] > fill_level_[victim]) victim = j;
  std::fill(fill_row_.begin(), fill_row_.end(), 0.0);
  fill_row_[victim] = 1.0;
  SetTableWeights(i, true, fill_row_.data(), 1.0);
}

[[gnu::noinline]] void RackSim::OnMessage(const Message& m) {
  ++counters_.events;
  switch (m.kind) {
    case Message::kDeliver: return Place(m.a, m.task);
    case Message::kStealRequest: {
      Task t;
      const auto thief_may_run = [this, &m](const Task& task) {
        if (!typed_) return true;
        const auto& allowed = candidates_[task.cls];
        return std::binary_search(allowed.begin(), allowed.end(), m.a);
      };
      if (!nodes_[m.b].StealQueued(&t, thief_may_run)) {
        ++counters_.failed_steals;
        ++decisions_.failed_steals[m.a];
        return;
      }
      AfterChange(m.b);
      ++counters_.steals;
      ++decisions_.steals[m.a];
      ++node_counters_[m.b].stolen_from;
      BoardOf(t).OnMove(t.origin, m.b, m.a);
      if (local_counts_) {
        local_count_[static_cast<size_t>(t.origin) * NumNodes() + m.b] -= 1;
        local_count_[static_cast<size_t>(t.origin) * NumNodes() + m.a] += 1;
      }
      if (config_.migration.delay_us <= 0) return Place(m.a, t);
      Message d(Message::kDeliver);
      d.a = m.a;
      d.task = t;
      return Schedule(now_ + config_.migration.delay_us, d);
    }
    case Message::kReply:
      BoardOf(m.task).OnReply(m.a, m.b, m.value);
      if (local_counts_) {
        local_count_[static_cast<size_t>(m.a) * NumNodes() + m.b] -= 1;
        if (policy_ == DispatchKind::kJbsq) JbsqRefill(m.b);
      }
      return;
    case Message::kBroadcast: {
      const double delay = config_.load_info.delay_us;
      for (auto& board : boards_) {
        if (delay > 0)
          broadcasts_.push_back(board.Truths());
        else
          board.Publish(board.Truths());
      }
      if (delay > 0) Schedule(now_ + delay, Message(Message::kPublish));
      return Schedule(static_cast<double>(++broadcasts_sent_ + 1) * config_.load_info.period_us,
                      Message(Message::kBroadcast));
    }
    case Message::kPublish:
      for (auto& board : boards_) {
        board.Publish(broadcasts_.front());
        broadcasts_.pop_front();
      }
      return;
    case Message::kDynamics: return ApplyDynamics(config_.dynamics[m.a]);
    case Message::kSample:
      sample_times_.push_back(now_);
      for (const auto& nd : nodes_) samples_.push_back(static_cast<float>(nd.Outstanding()));
      return Schedule(now_ + config_.sample_period_us, Message(Message::kSample));
    case Message::kRefresh:
      WaterFillTables();
      return Schedule(now_ + config_.dispatch.period_us, Message(Message::kRefresh));
  }
}

void RackSim::AfterChange(uint32_t i) {
  const Node& nd = nodes_[i];
  const double next = nd.NextEventTime();
  if (nodes_.size() > 1 && next != node_events_.Key(i)) node_events_.Update(i, next);
  if (track_truth_)
    for (uint32_t k = 0; k < boards_.size(); ++k) boards_[k].SetTruth(i, LoadOf(i, k));
  if (policy_ == DispatchKind::kCentralFcfs) CentralTrackIdle(i);
}

double RackSim::LoadOf(uint32_t i, uint32_t type) const {
  const Node& nd = nodes_[i];
  if (boards_.size() > 1) return nd.OutstandingOfType(type);  // per-type loads (metric outstanding)
  switch (config_.dispatch.metric) {
    case LoadMetric::kQueue: return nd.Queued();
    case LoadMetric::kExpectedWait: return nd.Outstanding() * nd.ExecEstimate() / nd.Workers();
    case LoadMetric::kNominalWait: return nd.Outstanding() * mean_size_ / (nd.Speed() * nd.Workers());
    case LoadMetric::kWork: return nd.OutstandingWork();
    default: return nd.Outstanding();
  }
}

double RackSim::LoadIncrement(uint32_t j, const Task& t) const {
  switch (config_.dispatch.metric) {
    case LoadMetric::kExpectedWait: return nodes_[j].ExecEstimate() / nodes_[j].Workers();
    case LoadMetric::kNominalWait: return mean_size_ / (nodes_[j].Speed() * nodes_[j].Workers());
    case LoadMetric::kWork: return t.size;
    default: return 1.0;
  }
}

// ------------------------------------------------------------------ dynamics

[[gnu::noinline]] void RackSim::ApplyDynamics(const DynamicsEvent& e) {
  switch (e.kind) {
    case DynamicsEvent::kSplit: config_.entry.split = e.values; return RebuildSplit();
    case DynamicsEvent::kSpeed:
      for (uint32_t i : e.nodes) {
        nodes_[i].SetSpeed(nodes_[i].Speed() * e.values[0], now_);
        dispatcher_.SetRate(i, nodes_[i].Workers(), nodes_[i].Speed());
        AfterChange(i);
      }
      if (policy_ == DispatchKind::kCentralFcfs) BuildSpeedClasses();
      return;
    case DynamicsEvent::kRemove:
    case DynamicsEvent::kAdd:
      for (uint32_t i : e.nodes) SetActive(i, e.kind == DynamicsEvent::kAdd);
      RebuildCandidates();
      RebuildSplit();
      for (uint32_t i : e.nodes) {
        AfterChange(i);
        if (e.kind != DynamicsEvent::kAdd) continue;
        if (policy_ == DispatchKind::kCentralFcfs) CentralRefill(i);  // waiting tasks go to it at once
        if (policy_ == DispatchKind::kJbsq) JbsqRefill(i);
        AfterChange(i);
      }
      return;
    case DynamicsEvent::kLoad:
      rate_ = e.values[0] * config_.Capacity() / config_.MeanSize();
      next_arrival_ = now_ + arrival_rng_.Exp1() / rate_;  // memoryless: redraw at the new rate
      return;
  }
}

void RackSim::SetActive(uint32_t i, bool active) {
  if (static_cast<bool>(is_active_[i]) == active) return;
  is_active_[i] = active;
  if (active)
    active_.insert(std::lower_bound(active_.begin(), active_.end(), i), i);
  else
    active_.erase(std::find(active_.begin(), active_.end(), i));
}

// Per type, the active nodes it may run on (locality, RackSched §3.6).
void RackSim::RebuildCandidates() {
  candidates_.assign(types_.size(), {});
  for (size_t k = 0; k < types_.size(); ++k) {
    const auto& allowed = types_[k].nodes;
    for (uint32_t i : active_)
      if (allowed.empty() || std::find(allowed.begin(), allowed.end(), i) != allowed.end()) candidates_[k].push_back(i);
  }
  dispatcher_.OnCandidatesChanged(candidates_);
}

// Cumulative traffic shares: over balancers, or over the active nodes.
void RackSim::RebuildSplit() {
  const auto& split = config_.entry.split;
  split_cum_.clear();
  if (entry_ == EntryKind::kSwitch) return;
  if (entry_ == EntryKind::kBalancers) {
    double c = 0;
    for (uint32_t k = 0; k < config_.entry.count; ++k) split_cum_.push_back(c += split.empty() ? 1.0 : split[k]);
  } else if (!split.empty()) {
    double c = 0;
    for (uint32_t i : active_) split_cum_.push_back(c += split[i]);
    if (!(c > 0)) split_cum_.clear();  // every node with traffic removed: fall back to uniform
  }
  for (auto& x : split_cum_) x /= split_cum_.back();
}

// --------------------------------------------------------------------- tables

void RackSim::CheckTableRow(const double* probs, uint32_t n, uint32_t row, const char* what) {
  double total = 0;
  for (uint32_t j = 0; j < n; ++j) {
    if (!(probs[j] >= 0) || !std::isfinite(probs[j]))
      throw std::invalid_argument(std::string(what) + "[" + std::to_string(row) + "][" + std::to_string(j) +
                                  "]: probabilities must be finite and >= 0, got " + std::to_string(probs[j]));
    total += probs[j];
  }
  if (std::fabs(total - 1.0) > 1e-6)
    throw std::invalid_argument(std::string(what) + "[" + std::to_string(row) + "]: probabilities must sum to 1, got " +
                                std::to_string(total));
}

void RackSim::SetTable(std::vector<double>& cum, uint32_t n, uint32_t row, const double* probs, const char* what) {
  if (cum.empty()) throw std::invalid_argument(std::string(what) + ": needs entry 'nodes' with policy 'table'");
  if (row >= n) throw std::invalid_argument(std::string(what) + ": node " + std::to_string(row) + " out of range");
  CheckTableRow(probs, n, row, what);
  double total = 0;
  for (uint32_t j = 0; j < n; ++j) total += probs[j];
  double c = 0;
  for (uint32_t j = 0; j < n; ++j) cum[static_cast<size_t>(row) * n + j] = (c += probs[j]) / total;
  cum[static_cast<size_t>(row) * n + n - 1] = 1.0;
}

void RackSim::SetMigrationTable(uint32_t node, const double* probs) {
  SetTable(migrate_cum_, NumNodes(), node, probs, "migration");
}

void RackSim::SetStealTable(uint32_t node, const double* probs) {
  SetTable(steal_cum_, NumNodes(), node, probs, "stealing");
}

// Inverse-CDF sampling from `width` cumulative probabilities ending at 1.
uint32_t RackSim::SampleCumulative(const double* c, uint32_t width, kernel::Rng& rng) {
  const double u = rng.Uniform();
  uint32_t lo = 0, hi = width - 1;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (c[mid] <= u)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// ------------------------------------------------------ central dispatching

// central_fcfs: group the nodes by speed, fastest first, and index those with an idle worker.
void RackSim::BuildSpeedClasses() {
  const uint32_t n = NumNodes();
  std::vector<double> speeds;
  for (const auto& nd : nodes_) speeds.push_back(nd.Speed());
  std::sort(speeds.begin(), speeds.end(), std::greater<double>());
  speeds.erase(std::unique(speeds.begin(), speeds.end()), speeds.end());
  idle_by_speed_.assign(speeds.size(), {});
  speed_class_.resize(n);
  idle_pos_.assign(n, kNotIdle);
  for (uint32_t i = 0; i < n; ++i) {
    speed_class_[i] =
        static_cast<uint32_t>(std::find(speeds.begin(), speeds.end(), nodes_[i].Speed()) - speeds.begin());
    CentralTrackIdle(i);
  }
}

[[gnu::noinline]] bool RackSim::CentralPlace(const Task& t) {
  for (auto& idle : idle_by_speed_) {
    if (idle.empty()) continue;
    // A uniformly chosen idle worker: nodes weighted by their idle workers.
    uint32_t i = idle[0];
    if (idle.size() > 1) {
      uint32_t total = 0;
      for (uint32_t j : idle) total += nodes_[j].IdleWorkers();
      uint32_t r = central_rng_.Below(total);
      for (uint32_t j : idle) {
        const uint32_t w = nodes_[j].IdleWorkers();
        if (r < w) {
          i = j;
          break;
        }
        r -= w;
      }
    }
    nodes_[i].Fetch(t, now_, 0.0);
    AfterChange(i);
    return true;
  }
  return false;
}

[[gnu::noinline]] void RackSim::CentralRefill(uint32_t i) {
  Node& nd = nodes_[i];
  if (!is_active_[i]) return;
  while (nd.IdleWorkers() > 0 && !dispatcher_queue_.Empty())
    nd.Fetch(dispatcher_queue_.PopFront(), now_, config_.dispatch.rtt_us);
}

[[gnu::noinline]] void RackSim::CentralTrackIdle(uint32_t i) {
  auto& idle = idle_by_speed_[speed_class_[i]];
  const bool has_idle = is_active_[i] && nodes_[i].IdleWorkers() > 0;
  if (has_idle && idle_pos_[i] == kNotIdle) {
    idle_pos_[i] = static_cast<uint32_t>(idle.size());
    idle.push_back(i);
  } else if (!has_idle && idle_pos_[i] != kNotIdle) {
    const uint32_t last = idle.back();
    idle[idle_pos_[i]] = last;
    idle_pos_[last] = idle_pos_[i];
    idle.pop_back();
    idle_pos_[i] = kNotIdle;
  }
}

[[gnu::noinline]] void RackSim::JbsqRefill(uint32_t i) {
  if (!is_active_[i]) return;
  const double room = static_cast<double>(config_.dispatch.bound) * workers_of_[i];
  while (!dispatcher_queue_.Empty() && local_count_[i] < room)  // one switch: viewer 0
    Send(0, i, dispatcher_queue_.PopFront());
}

// -------------------------------------------------------------- inspection

uint64_t RackSim::InFlight() const {
  uint64_t n = dispatcher_queue_.Size();
  for (const auto& nd : nodes_) nd.ForEachTask([&n](const Task&) { ++n; });
  messages_.ForEach([&n](const Message& m) { n += m.kind == Message::kDeliver; });
  return n;
}

void RackSim::ClearSamples() {
  sample_times_.clear();
  samples_.clear();
}

}  // namespace dcgym::rack
