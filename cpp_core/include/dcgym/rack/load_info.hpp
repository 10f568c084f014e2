// Where dispatchers get node loads from.
//
// The rack reports every change of a node's load (in the configured metric)
// to its LoadInfo; dispatchers read only View(), an array with one believed
// load per node. Fresh information (this file) copies each change through at
// once. Stale sources (periodic broadcasts, piggybacking, ...) plug in here
// by deciding when a change becomes visible in View().
#pragma once

#include <cstdint>
#include <vector>

#include "dcgym/rack/config.hpp"

namespace dcgym::rack {

class LoadInfo {
 public:
  LoadInfo(const LoadInfoConfig& config, uint32_t num_nodes)
      : config_(config), view_(num_nodes, 0.0) {}

  void OnNodeChange(uint32_t node, double load, double /*now*/) { view_[node] = load; }
  const double* View() const { return view_.data(); }

 private:
  LoadInfoConfig config_;
  std::vector<double> view_;
};

}  // namespace dcgym::rack
