#include "dcgym/rack/rack_sim.hpp"

#include <algorithm>
#include <stdexcept>

namespace dcgym::rack {

using kernel::Stream;

namespace {

constexpr uint32_t kNotIdle = UINT32_MAX;

std::vector<kernel::LogHistogram> ClassHistograms(const RackConfig& c) {
  return std::vector<kernel::LogHistogram>(c.service.NumClasses());
}

}  // namespace

RackSim::RackSim(const RackConfig& config)
    : config_((config.Validate(), config)),
      node_events_(config.NumNodes()),
      load_info_(config.load_info, config.NumNodes()),
      dispatcher_(config.dispatch, config.NumNodes(), kernel::MakeRng(config.seed, Stream::kDispatch)),
      track_loads_(dispatcher_.NeedsLoads()),
      central_(config.dispatch.kind == DispatchKind::kCentralFcfs),
      per_class_(config.service.NumClasses() > 1),
      arrival_rng_(kernel::MakeRng(config.seed, Stream::kArrivals)),
      service_rng_(kernel::MakeRng(config.seed, Stream::kService)),
      central_rng_(kernel::MakeRng(config.seed, Stream::kDispatch, 1)),
      node_counters_(config.NumNodes()),
      latency_by_class_(ClassHistograms(config)) {
  nodes_.reserve(config.NumNodes());
  for (const auto& g : config.groups)
    for (uint32_t k = 0; k < g.count; ++k) nodes_.emplace_back(g, config.intra, &starts_);
  rate_ = config.load * config.Capacity() / config.service.Mean();
  next_arrival_ = arrival_rng_.Exp1() / rate_;

  if (central_) {
    std::vector<double> speeds;
    for (const auto& nd : nodes_) speeds.push_back(nd.Speed());
    std::sort(speeds.begin(), speeds.end(), std::greater<double>());
    speeds.erase(std::unique(speeds.begin(), speeds.end()), speeds.end());
    idle_by_speed_.resize(speeds.size());
    speed_class_.resize(nodes_.size());
    idle_pos_.assign(nodes_.size(), kNotIdle);
    for (uint32_t i = 0; i < nodes_.size(); ++i) {
      speed_class_[i] = static_cast<uint32_t>(
          std::find(speeds.begin(), speeds.end(), nodes_[i].Speed()) - speeds.begin());
      CentralTrackIdle(i);
    }
  }
}

[[gnu::flatten]] void RackSim::RunTasks(uint64_t n) {
  const uint64_t target = counters_.arrived + n;
  for (;;) {
    const double t_node = node_events_.TopKey();
    if (next_arrival_ <= t_node) {
      if (counters_.arrived >= target) return;
      now_ = next_arrival_;
      OnArrival();
    } else {
      now_ = t_node;
      OnNodeEvent(node_events_.Top());
    }
  }
}

[[gnu::flatten]] void RackSim::RunUntil(double t_us) {
  if (!(t_us >= now_)) throw std::invalid_argument("run_until: time must be >= the current time");
  for (;;) {
    const double t_node = node_events_.TopKey();
    if (next_arrival_ <= t_node) {
      if (next_arrival_ > t_us) break;
      now_ = next_arrival_;
      OnArrival();
    } else {
      if (t_node > t_us) break;
      now_ = t_node;
      OnNodeEvent(node_events_.Top());
    }
  }
  now_ = t_us;
}

void RackSim::OnArrival() {
  ++counters_.events;
  const kernel::Sample s = config_.service.Draw(service_rng_);
  Task t;
  t.arrival = now_;
  t.work = s.value;
  t.cls = s.cls;
  if (counters_.arrived < config_.warmup_tasks) {
    t.flags = Task::kWarmup;
    ++counters_.warmup;
  }
  ++counters_.arrived;
  next_arrival_ = now_ + arrival_rng_.Exp1() / rate_;

  if (central_) {
    if (!CentralPlace(t)) central_queue_.PushBack(t);
    return;
  }
  Place(dispatcher_.Pick(load_info_.View()), t);
}

void RackSim::Place(uint32_t i, const Task& t) {
  if (!nodes_[i].Admit(t, now_)) {
    ++counters_.dropped;
    ++node_counters_[i].dropped;
    return;
  }
  AfterChange(i);
}

void RackSim::OnNodeEvent(uint32_t i) {
  ++counters_.events;
  Task done;
  if (nodes_[i].HandleEvent(now_, &done)) Complete(i, done);
  if (central_) CentralRefill(i);
  AfterChange(i);
}

void RackSim::Complete(uint32_t i, const Task& t) {
  ++counters_.completed;
  ++node_counters_[i].completed;
  if (t.flags & Task::kWarmup) return;
  const double latency = now_ - t.arrival;
  latency_.Record(latency);
  if (per_class_) latency_by_class_[t.cls].Record(latency);
}

void RackSim::AfterChange(uint32_t i) {
  const Node& nd = nodes_[i];
  const double next = nd.NextEventTime();
  if (next != node_events_.Key(i)) node_events_.Update(i, next);
  if (track_loads_) {
    const double load = config_.dispatch.metric == LoadMetric::kQueue ? nd.Queued() : nd.Outstanding();
    load_info_.OnNodeChange(i, load, now_);
  }
  if (central_) CentralTrackIdle(i);
}

bool RackSim::CentralPlace(const Task& t) {
  for (auto& idle : idle_by_speed_) {
    if (idle.empty()) continue;
    const uint32_t i = idle[idle.size() == 1 ? 0 : central_rng_.Below(static_cast<uint32_t>(idle.size()))];
    nodes_[i].Fetch(t, now_, 0.0);
    AfterChange(i);
    return true;
  }
  return false;
}

void RackSim::CentralRefill(uint32_t i) {
  Node& nd = nodes_[i];
  while (nd.IdleWorkers() > 0 && !central_queue_.Empty())
    nd.Fetch(central_queue_.PopFront(), now_, config_.dispatch.rtt_us);
}

void RackSim::CentralTrackIdle(uint32_t i) {
  auto& idle = idle_by_speed_[speed_class_[i]];
  const bool has_idle = nodes_[i].IdleWorkers() > 0;
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

uint64_t RackSim::InFlight() const {
  uint64_t n = central_queue_.Size();
  for (const auto& nd : nodes_) nd.ForEachTask([&n](const Task&) { ++n; });
  return n;
}

}  // namespace dcgym::rack
