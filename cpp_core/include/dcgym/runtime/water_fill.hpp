// Water-filling: a node's migration table from the loads it believes, the
// rack family's fixed rule in Malcolm's action space (docs/rack.md). The one
// place of the rule: the engine's `water_fill` heuristic (rack/water_fill.hpp)
// and the policy file's `fill` kind (runtime/fill.hpp) both call it.
//
// Node j, at level u_j (its expected wait in mean service times, about its
// outstanding tasks per unit of capacity c_j = workers x speed), can take
// c_j (L - u_j)^+ more tasks before its level reaches L. The table sends an
// arriving task to j with probability proportional to that headroom, for
// the level L that absorbs `volume` tasks:
//
//   sum_j c_j (L - u_j)^+ = volume,   p_j = (1 - mix) c_j (L - u_j)^+ / volume + mix c_j / sum_k c_k.
//
// A node keeps a table for a whole heartbeat, so the volume is what the
// rack receives in `horizon` heartbeats: a level that low nodes fill over
// the heartbeat instead of one least-loaded node taking every task (JSQ's
// herd on stale loads). The capacity mix keeps every node reachable.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace dcgym::runtime {

// Writes the table over the `m` nodes listed in `nodes` (indices into `level`, `capacity` and `out`; entries of
// `out` for nodes not listed are left alone). Needs m >= 1, capacities > 0, volume > 0, mix in [0, 1].
// `order` is scratch of at least m entries (reserved: nothing is allocated then).
inline void WaterFillTable(const double* level, const double* capacity, const std::vector<std::uint32_t>& nodes,
                           double volume, double mix, std::vector<std::uint32_t>& order, double* out) {
  order.assign(nodes.begin(), nodes.end());
  // Ties by index: the same beliefs give the same table on every platform.
  std::sort(order.begin(), order.end(),
            [&](std::uint32_t a, std::uint32_t b) { return level[a] < level[b] || (level[a] == level[b] && a < b); });
  // Fill the lowest nodes first: with the k lowest filled, L = (volume + sum c u) / sum c, valid while it stays
  // at or below the next node's level.
  double c_sum = 0, cu_sum = 0, fill = 0, total_capacity = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::uint32_t j = order[k];
    c_sum += capacity[j];
    cu_sum += capacity[j] * level[j];
    fill = (volume + cu_sum) / c_sum;
    if (k + 1 == order.size() || fill <= level[order[k + 1]]) break;
  }
  for (std::uint32_t j : nodes) total_capacity += capacity[j];
  double headroom_sum = 0;
  for (std::uint32_t j : nodes) headroom_sum += capacity[j] * std::max(fill - level[j], 0.0);
  if (!(headroom_sum > 0)) {  // a volume lost in the rounding of huge levels: the lowest node takes the fill share
    for (std::uint32_t j : nodes) out[j] = mix * capacity[j] / total_capacity;
    out[order[0]] += 1 - mix;
    return;
  }
  for (std::uint32_t j : nodes)
    out[j] =
        (1 - mix) * capacity[j] * std::max(fill - level[j], 0.0) / headroom_sum + mix * capacity[j] / total_capacity;
}

}  // namespace dcgym::runtime
