#include "dcgym/rack/fill_controller.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace dcgym::rack {

FillController::FillController(RackSim& sim, runtime::FillPolicy policy, double heartbeat_us, double warmup_us)
    : sim_(sim), policy_(std::move(policy)), heartbeat_us_(heartbeat_us), n_(sim.NumNodes()) {
  const auto& cfg = sim.Config();
  if (cfg.entry.kind != EntryKind::kNodes || cfg.dispatch.kind != DispatchKind::kTable)
    throw std::invalid_argument("config: the controller needs entry kind 'nodes' and dispatch policy 'table'");
  if (policy_.num_nodes() != n_)
    throw std::invalid_argument("policy: made for " + std::to_string(policy_.num_nodes()) + " nodes, the rack has " +
                                std::to_string(n_));
  if (!(heartbeat_us > 0 && std::isfinite(heartbeat_us)))
    throw std::invalid_argument("heartbeat_us: must be finite and > 0");
  if (!(warmup_us >= 0)) throw std::invalid_argument("warmup_us: must be >= 0");
  raw_.resize(n_);
  levels_.resize(n_);
  table_m_.resize(n_ * n_);
  table_s_.resize(n_ * n_);
  if (warmup_us > 0) {
    sim_.RunUntil(warmup_us);
    sim_.StepLatency().Clear();
  }
}

void FillController::Act() {
  const double arrivals = sim_.ArrivalRate() * heartbeat_us_;
  for (std::size_t i = 0; i < n_; ++i) {
    sim_.BeliefRow(static_cast<uint32_t>(i), raw_.data());
    policy_.Levels(raw_.data(), levels_.data());
    double* tm = table_m_.data() + i * n_;
    double* ts = table_s_.data() + i * n_;
    policy_.Tables(i, levels_.data(), arrivals, tm, ts);
    sim_.SetTableWeights(static_cast<uint32_t>(i), false, tm, 1.0);
    sim_.SetTableWeights(static_cast<uint32_t>(i), true, ts, 1.0);
  }
}

void FillController::Run(std::uint64_t heartbeats) {
  for (std::uint64_t k = 0; k < heartbeats; ++k) {
    Act();
    sim_.RunUntil(sim_.Now() + heartbeat_us_);
    sim_.Decisions().Reset();
  }
}

}  // namespace dcgym::rack
