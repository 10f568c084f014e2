// Who holds which cores and ways.
//
// A service holds private cores and ways (hard partitioning, as OSML and
// PARTIES do with taskset and Intel CAT) and may also belong to one share
// group: a pool of cores and ways that its members share (OSML's Algo. 4
// resource sharing; "Unmanaged" is one group holding everything). Positions
// follow OSML's program_mgr: share groups first, then each service's private
// cores in service order; logical cores 2p and 2p + 1 are the hyperthreads of
// physical core p (OSML's PHYSICAL_CORES ordering). A service whose range
// starts or ends in the middle of a physical core shares it with a neighbour.
#pragma once

#include <cstdint>
#include <vector>

#include "dcgym/colo/platform.hpp"

namespace dcgym::colo {

struct Allocation {
  uint32_t cores = 0;   // private logical cores
  uint32_t ways = 0;    // private LLC ways
  double mba = 1.0;     // memory-bandwidth cap, fraction of the peak (MBA)
  double freq_mhz = 0;  // core frequency of the service's threads
  int32_t group = -1;   // share group, or -1
};

struct ShareGroup {
  uint32_t cores = 0;
  uint32_t ways = 0;
  uint64_t members = 0;  // bit i: service i
  bool Empty() const { return members == 0; }
};

// Who owns the other hyperthread of a service's partial physical core.
struct Neighbour {
  enum class Kind { kIdle, kService, kGroup };
  Kind kind = Kind::kIdle;
  uint32_t id = 0;
};

// Where a service's private cores sit.
struct Placement {
  uint32_t start = 0;      // first logical core
  uint32_t own_pairs = 0;  // physical cores whose hyperthreads are all the service's
  uint32_t partials = 0;   // physical cores shared with a neighbour (0, 1 or 2)
  Neighbour neighbour[2];
};

struct Layout {
  std::vector<Placement> services;
  std::vector<Placement> groups;  // a group's pool is placed like a service
  uint32_t used_cores = 0;
  uint32_t used_ways = 0;
};

// Lays out the private cores of the services marked active and the groups'
// pools. Does not check conservation (CheckConservation does).
Layout BuildLayout(const Platform& platform, const std::vector<Allocation>& alloc,
                   const std::vector<ShareGroup>& groups, const std::vector<uint8_t>& active);

// Throws std::invalid_argument when the cores or ways held exceed the
// platform's, naming the resource, the total and the capacity.
void CheckConservation(const Platform& platform, const std::vector<Allocation>& alloc,
                       const std::vector<ShareGroup>& groups);

}  // namespace dcgym::colo
