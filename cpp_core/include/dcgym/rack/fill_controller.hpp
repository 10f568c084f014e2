// A `fill` policy file (runtime/fill.hpp) acting in the engine: every
// heartbeat, each node's migration and stealing tables from the loads it
// believes, as a deployment would compute them, with no Python between
// heartbeats.
//
// Node i's levels are its belief row (RackSim::BeliefRow, expected waits in
// us for the expected_wait metric) times the file's level_scale; the rack's
// arrivals per heartbeat are the engine's arrival rate times the heartbeat
// (what the `water_fill` heuristic sizes its volume with; a deployment
// measures it). With zero gains the tables are water_fill's (to the float32
// rounding of the file's level_scale, horizon and mix).
#pragma once

#include <cstdint>
#include <vector>

#include "dcgym/rack/rack_sim.hpp"
#include "dcgym/runtime/fill.hpp"

namespace dcgym::rack {

class FillController {
 public:
  /// Drives `sim` (entry 'nodes', dispatch 'table'; it must outlive the controller) with `policy` every
  /// `heartbeat_us`, after `warmup_us` with the engine's initial tables. std::invalid_argument if they do not fit.
  FillController(RackSim& sim, runtime::FillPolicy policy, double heartbeat_us, double warmup_us = 0.0);

  /// Runs `heartbeats` heartbeats: set every node's tables, advance one heartbeat.
  void Run(std::uint64_t heartbeats);

  std::size_t NumNodes() const { return n_; }
  /// The migration / stealing tables set by the last heartbeat (N x N, row i = node i).
  const std::vector<double>& MigrationTables() const { return table_m_; }
  const std::vector<double>& StealTables() const { return table_s_; }

 private:
  void Act();

  RackSim& sim_;
  runtime::FillPolicy policy_;
  double heartbeat_us_;
  std::size_t n_;
  std::vector<double> raw_, levels_, table_m_, table_s_;
};

}  // namespace dcgym::rack
