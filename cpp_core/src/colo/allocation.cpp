#include "dcgym/colo/allocation.hpp"

#include "dcgym/kernel/check.hpp"

namespace dcgym::colo {
namespace {

constexpr int32_t kIdle = -1;

// Owner of each logical core: a service id, kIdle, or -2 - group.
Neighbour OwnerToNeighbour(int32_t owner) {
  Neighbour n;
  if (owner >= 0) {
    n.kind = Neighbour::Kind::kService;
    n.id = static_cast<uint32_t>(owner);
  } else if (owner <= -2) {
    n.kind = Neighbour::Kind::kGroup;
    n.id = static_cast<uint32_t>(-2 - owner);
  }
  return n;
}

// Counts the whole and partial physical cores of [start, start + len).
Placement Place(uint32_t start, uint32_t len, uint32_t per_core, const std::vector<int32_t>& owner) {
  Placement p;
  p.start = start;
  if (len == 0) return p;
  if (per_core == 1) {
    p.own_pairs = len;
    return p;
  }
  const uint32_t end = start + len;  // exclusive
  const uint32_t first = start / 2, last = (end - 1) / 2;
  for (uint32_t phys = first; phys <= last; ++phys) {
    const uint32_t a = 2 * phys, b = 2 * phys + 1;
    const bool has_a = a >= start && a < end, has_b = b >= start && b < end;
    if (has_a && has_b) {
      ++p.own_pairs;
    } else {
      const uint32_t other = has_a ? b : a;
      const int32_t o = other < owner.size() ? owner[other] : kIdle;
      p.neighbour[p.partials++] = OwnerToNeighbour(o);
    }
  }
  return p;
}

}  // namespace

Layout BuildLayout(const Platform& platform, const std::vector<Allocation>& alloc,
                   const std::vector<ShareGroup>& groups, const std::vector<uint8_t>& active) {
  Layout layout;
  const uint32_t n = static_cast<uint32_t>(alloc.size());
  std::vector<int32_t> owner(platform.logical_cores, kIdle);
  std::vector<uint32_t> group_start(groups.size()), service_start(n);
  uint32_t next = 0;
  auto claim = [&](uint32_t len, int32_t who) {
    const uint32_t start = next;
    for (uint32_t l = 0; l < len && next < owner.size(); ++l) owner[next++] = who;
    return start;
  };
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].Empty()) continue;
    group_start[g] = claim(groups[g].cores, -2 - static_cast<int32_t>(g));
    layout.used_ways += groups[g].ways;
  }
  for (uint32_t i = 0; i < n; ++i) {
    if (!active[i]) continue;
    service_start[i] = claim(alloc[i].cores, static_cast<int32_t>(i));
    layout.used_ways += alloc[i].ways;
  }
  layout.used_cores = next;
  const uint32_t per_core = platform.ThreadsPerCore();
  layout.groups.resize(groups.size());
  for (size_t g = 0; g < groups.size(); ++g)
    if (!groups[g].Empty()) layout.groups[g] = Place(group_start[g], groups[g].cores, per_core, owner);
  layout.services.resize(n);
  for (uint32_t i = 0; i < n; ++i)
    if (active[i]) layout.services[i] = Place(service_start[i], alloc[i].cores, per_core, owner);
  return layout;
}

void CheckConservation(const Platform& platform, const std::vector<Allocation>& alloc,
                       const std::vector<ShareGroup>& groups) {
  uint64_t cores = 0, ways = 0;
  for (const auto& a : alloc) {
    cores += a.cores;
    ways += a.ways;
  }
  for (const auto& g : groups) {
    if (g.Empty()) continue;
    cores += g.cores;
    ways += g.ways;
  }
  using kernel::Fail;
  using kernel::Str;
  if (cores > platform.logical_cores)
    Fail("cores",
         "allocations hold " + Str(cores) + " cores in total, the platform has " + Str(platform.logical_cores));
  if (ways > platform.ways)
    Fail("ways", "allocations hold " + Str(ways) + " LLC ways in total, the platform has " + Str(platform.ways));
}

}  // namespace dcgym::colo
