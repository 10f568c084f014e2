// Flow arrivals: Poisson per host group (or a given trace), sizes from the
// group's CDF, destinations uniform over the other hosts or from a traffic
// matrix row, a path by ECMP (uniform over the pair's paths).
//
// The hosts of all groups together form one Poisson process of rate
// sum_g lambda_g; an arrival picks its group with probability proportional
// to lambda_g and its source uniformly in the group. lambda_g makes each of
// the group's hosts offer `load` x one host link's capacity on average:
// lambda_g = load_g x C x hosts_g / E[S_g] (single_link: load_g x C / E[S_g]
// for the group as a whole). A change of load or sizes (dynamics) redraws
// the next arrival from the change time, which is exact for a
// Poisson process (memoryless).
//
// Streams: arrival times, sizes, endpoints and paths each draw from their
// own stream of the seed, so two disciplines run on one seed see the very
// same flows (common random numbers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcgym/flow/config.hpp"
#include "dcgym/flow/topology.hpp"
#include "dcgym/kernel/distribution.hpp"
#include "dcgym/kernel/rng.hpp"

namespace dcgym::flow {

struct Arrival {
  double time = 0;
  double size = 0;  // bytes, >= 1
  uint32_t src = 0, dst = 0, group = 0, path = 0;
  int32_t priority = -1;  // trace only: a pinned level
  double cap = kNoCap;    // trace only: bytes/s
};

class Arrivals {
 public:
  Arrivals(const FlowConfig& config, const Topology& topology);

  double NextTime() const { return next_time_; }
  double NextChangeTime() const { return next_change_time_; }
  // The pending arrival; the one after it is drawn.
  Arrival Pop();
  // Applies every change due at NextChangeTime() and redraws the next
  // arrival from that time.
  void ApplyChanges();

  uint32_t NumGroups() const { return static_cast<uint32_t>(groups_.size()); }
  double Load(uint32_t g) const { return groups_[g].load; }
  const std::string& SizesName(uint32_t g) const { return groups_[g].sizes_name; }
  double MeanSize(uint32_t g) const { return groups_[g].sizes.Mean(); }
  double ArrivalRate() const { return total_rate_; }  // flows per second, now
  uint32_t GroupOf(uint32_t host) const;

 private:
  struct Group {
    uint32_t first, count;
    kernel::Distribution sizes;
    std::string sizes_name;
    double load;
    double rate = 0;  // flows per second
  };

  void ComputeRates();
  uint32_t PickDestination(uint32_t src);

  const Topology& topology_;
  std::vector<Group> groups_;
  std::vector<double> cumulative_;         // of group rates
  std::vector<double> matrix_cumulative_;  // hosts x hosts, row-wise cumulative weights
  std::vector<ChangeConfig> changes_;
  size_t next_change_ = 0;
  double next_change_time_;
  std::vector<TraceFlow> trace_;
  size_t next_trace_ = 0;
  double total_rate_ = 0, next_time_ = 0;
  kernel::Rng time_rng_, size_rng_, endpoint_rng_, path_rng_;
};

// The sizes of a SizeConfig (a named CDF or a given one), validated.
kernel::Distribution MakeSizes(const SizeConfig& sizes, const std::string& field);

}  // namespace dcgym::flow
