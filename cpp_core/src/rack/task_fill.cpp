#include "dcgym/rack/task_fill.hpp"

#include <stdexcept>

namespace dcgym::rack {

namespace {
// One per-task policy per simulation: a second would take the arrivals over, and the first, when it dies, would
// unhook the second's.
RackSim& Unhooked(RackSim& sim) {
  if (sim.HasArrivalRefresh())
    throw std::invalid_argument("sim: already driven by a per-task fill policy (one per simulation)");
  return sim;
}
}  // namespace

TaskFill::TaskFill(RackSim& sim, runtime::FillPolicy& policy, double heartbeat_us, bool record)
    : sim_(Unhooked(sim)), policy_(policy), heartbeat_us_(heartbeat_us), n_(sim.NumNodes()) {
  raw_.resize(n_);
  levels_.resize(n_);
  table_.resize(n_);
  steal_scratch_.resize(n_);
  sim_.SetArrivalRefresh([this](std::uint32_t node) { Refresh(node); });
  if (record) {
    recorded_.resize(n_);
    sim_.SetArrivalDecided([this](std::uint32_t node, std::uint32_t j) { Record(node, j); });
  }
}

TaskFill::~TaskFill() {
  sim_.SetArrivalRefresh(nullptr);
  sim_.SetArrivalDecided(nullptr);
}

void TaskFill::Tables(double* migration, double* stealing) {
  const double arrivals = HeartbeatArrivals();
  for (std::size_t i = 0; i < n_; ++i) {
    sim_.BeliefRow(static_cast<std::uint32_t>(i), raw_.data());
    policy_.Levels(raw_.data(), levels_.data());
    policy_.Tables(i, levels_.data(), arrivals, migration + i * n_, stealing + i * n_);
  }
}

void TaskFill::Refresh(std::uint32_t node) {
  sim_.BeliefRow(node, raw_.data());
  policy_.Levels(raw_.data(), levels_.data());
  arrivals_ = HeartbeatArrivals();
  policy_.Tables(node, levels_.data(), arrivals_, table_.data(), steal_scratch_.data());
  sim_.SetTableWeights(node, false, table_.data(), 1.0);
}

// The decision of the arrival Refresh has just set the table for: levels_ and arrivals_ are still its.
void TaskFill::Record(std::uint32_t node, std::uint32_t j) {
  Decisions& d = recorded_[node];
  d.levels.insert(d.levels.end(), levels_.begin(), levels_.end());
  d.arrivals.push_back(arrivals_);
  d.dest.push_back(j);
}

void TaskFill::Clear() {
  for (Decisions& d : recorded_) {
    d.dest.clear();
    d.levels.clear();
    d.arrivals.clear();
  }
}

}  // namespace dcgym::rack
