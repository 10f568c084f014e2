// Rate allocation of the flow model, a component apart from the model (as
// SimGrid keeps its lmm max-min solver apart from its network models).
//
// The allocation: flows sit on K <= 8 strict-priority levels (0 highest).
// Level 0 gets max-min fair rates on the link capacities; level l gets
// max-min fair rates on what levels 0..l-1 leave on each link. A flow may
// carry its own rate cap (a private constraint of that capacity). This is
// the fluid model of strict-priority switch queues with fair sharing inside
// a queue (PIAS, Bai et al. NSDI 2015; AuTO, Chen et al. SIGCOMM 2018 §3.2).
//
// Max-min within a level is computed by progressive filling (Bertsekas and
// Gallager, Data Networks, 2nd ed. §6.5.2): repeatedly take the link with
// the smallest fair share (remaining capacity / unfrozen flows) or the
// smallest cap, freeze its flows at that rate, subtract it from their other
// links. Every flow so ends with a bottleneck: a (level, link) pair, whose
// share is its rate, or its own cap. Flows with the same bottleneck always
// have the same rate, which lets the model advance them with one clock.
//
// Incremental: Add/Remove/Set* mark the touched (level, link) cells dirty.
// Solve() then visits levels from the highest down. At a level it
// recomputes only a region: the flows bottlenecked at a dirty link (and the
// flows added or changed) and, transitively, those bottlenecked at a link a
// recomputed flow crosses; every other flow keeps its rate as fixed load,
// and a fixed flow the new rates would leave without a valid bottleneck is
// pulled in (FillRegion). A link is marked dirty at the next level holding
// flows on it only if the capacity left to it changed (empty levels are
// skipped; their residual is computed when a flow arrives). A link whose
// flows at a level are all one-hop and uncapped (a single bottleneck, the
// M/G/1 case) is solved in O(1) without visiting its flows.
// `incremental = false` instead recomputes every flow of every level at
// every Solve(): the reference the benchmark and the tests compare with.
//
// Results are deterministic: ties between links go to the lower link id, a
// cap equal to a link's share loses to the link.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "dcgym/flow/keyed_heap.hpp"

namespace dcgym::flow {

inline constexpr uint32_t kMaxLevels = 8;
inline constexpr uint32_t kMaxHops = 4;
inline constexpr double kNoCap = std::numeric_limits<double>::infinity();

// The links a flow crosses, in order; at most kMaxHops, all distinct.
struct Path {
  uint32_t hops = 0;
  uint32_t link[kMaxHops] = {0, 0, 0, 0};
};

class RateSolver {
 public:
  // Bottleneck() of a flow limited by its own cap; of a flow not yet solved.
  static constexpr uint32_t kCapLimited = 0xfffffffeu;
  static constexpr uint32_t kUnsolved = 0xffffffffu;

  // capacity: per link, in any rate unit (the model uses bytes/s).
  RateSolver(std::vector<double> capacity, uint32_t levels, bool incremental = true);

  uint32_t NumLinks() const { return num_links_; }
  uint32_t NumLevels() const { return num_levels_; }
  bool Incremental() const { return incremental_; }

  // Flows are named by ids chosen by the caller (the model's slots); arrays
  // grow to the largest id. Each call throws std::invalid_argument on a bad
  // id, level, cap or path.
  void Add(uint32_t f, const Path& path, uint32_t level, double cap = kNoCap);
  void Remove(uint32_t f);
  void SetLevel(uint32_t f, uint32_t level);
  void SetCap(uint32_t f, double cap);  // kNoCap removes the cap
  void SetPath(uint32_t f, const Path& path);
  void SetCapacity(uint32_t link, double capacity);

  // Brings every rate up to date. Afterwards Moved() lists the flows whose
  // bottleneck changed (every flow added or changed since the last Solve is
  // listed), Reshared() the cells (level * NumLinks() + link) whose share
  // changed, LinksChanged() the links whose total rate changed.
  void Solve();
  const std::vector<uint32_t>& Moved() const { return moved_; }
  const std::vector<uint32_t>& Reshared() const { return reshared_; }
  const std::vector<uint32_t>& LinksChanged() const { return links_changed_; }

  bool Active(uint32_t f) const { return f < flows_.size() && flows_[f].active; }
  double Rate(uint32_t f) const {
    const FlowState& s = flows_[f];
    return s.bottleneck == kCapLimited ? s.cap : share_[Cell(s.level, s.bottleneck)];
  }
  uint32_t Bottleneck(uint32_t f) const { return flows_[f].bottleneck; }
  uint32_t Level(uint32_t f) const { return flows_[f].level; }
  double Cap(uint32_t f) const { return flows_[f].cap; }
  const Path& PathOf(uint32_t f) const { return flows_[f].path; }

  // The rate of every flow bottlenecked at `link` on `level`.
  double Share(uint32_t level, uint32_t link) const { return share_[Cell(level, link)]; }
  // Capacity left to `level` on `link` by the levels above it.
  double Residual(uint32_t level, uint32_t link) const { return ResidualFromAbove(level, link); }
  double LinkRate(uint32_t link) const { return link_rate_[link]; }  // sum over levels
  double Capacity(uint32_t link) const { return capacity_[link]; }
  uint32_t FlowsOn(uint32_t level, uint32_t link) const {
    return static_cast<uint32_t>(adjacency_[Cell(level, link)].size());
  }
  uint32_t FlowsAt(uint32_t level) const { return flows_at_[level]; }
  uint32_t NumActive() const { return num_active_; }

  // Work counters: flows visited by progressive filling, cells solved in O(1).
  uint64_t FlowVisits() const { return flow_visits_; }
  uint64_t FastCells() const { return fast_cells_; }

 private:
  struct FlowState {
    Path path;
    uint32_t pos[kMaxHops] = {0, 0, 0, 0};  // index in the adjacency list of each hop
    uint32_t level = 0;
    uint32_t bottleneck = kUnsolved;
    uint32_t next_bottleneck = kUnsolved;  // progressive filling's result
    double cap = kNoCap;
    uint32_t visit = 0;   // component search stamp
    uint32_t frozen = 0;  // progressive filling stamp
    bool active = false;
    bool touched = false;  // listed in touched_
  };

  uint32_t Cell(uint32_t level, uint32_t link) const { return level * num_links_ + link; }
  static bool Complex(const FlowState& s) { return s.path.hops > 1 || s.cap != kNoCap; }
  void CheckFlow(uint32_t f, const char* what) const;
  void CheckPath(const Path& path) const;
  void Attach(uint32_t f);  // into the adjacency lists of its level; marks cells dirty
  void Detach(uint32_t f);
  void Touch(uint32_t f);
  void MarkDirty(uint32_t level, uint32_t link);
  void SolveLevel(uint32_t level);
  void SolveFast(uint32_t level, uint32_t link);
  void AddRegionLink(uint32_t link);
  void AddRegionFlow(uint32_t f);
  void ExpandRegion(uint32_t level);
  void FillRegion(uint32_t level);
  void SetResidualBelow(uint32_t level, uint32_t link, double used);
  // What the nearest level above `level` holding flows on `link` leaves (the
  // capacity if none): the residual of an empty cell, which is not kept.
  double ResidualFromAbove(uint32_t level, uint32_t link) const;

  uint32_t num_links_, num_levels_;
  bool incremental_;
  std::vector<FlowState> flows_;
  std::vector<double> capacity_;                  // per link
  std::vector<uint8_t> occupied_;                 // per link: bit l set if level l has flows there
  std::vector<std::vector<uint32_t>> adjacency_;  // per cell: flows of that level on that link
  std::vector<double> residual_;                  // per occupied cell: capacity left by the levels above
  std::vector<double> used_;                      // per cell: total rate of the level's flows
  std::vector<double> share_;                     // per cell: rate of the flows bottlenecked there
  std::vector<uint32_t> complex_;                 // per cell: flows with several hops or a cap
  std::vector<double> link_rate_;
  std::vector<uint32_t> flows_at_;
  uint32_t num_active_ = 0;

  // Dirty cells, one list per level; a cell is listed once per Solve.
  std::vector<std::vector<uint32_t>> dirty_;
  std::vector<uint32_t> dirty_stamp_;  // per cell
  uint32_t dirty_levels_ = 0;          // bit l: dirty_[l] is not empty
  uint32_t solve_stamp_ = 1;
  std::vector<uint32_t> touched_;
  std::vector<uint32_t> moved_, reshared_, links_changed_;
  std::vector<uint32_t> link_changed_stamp_;
  uint32_t changed_stamp_ = 1;

  // Scratch of one level's region: the flows recomputed and the links they cross.
  uint32_t visit_stamp_ = 0, frozen_stamp_ = 0;
  std::vector<uint32_t> link_visit_;  // per link: in the region
  std::vector<uint32_t> region_links_, region_flows_, pending_;
  std::vector<double> remaining_, share_new_, used_new_;  // per link
  std::vector<uint32_t> unfrozen_;                        // per link
  std::vector<uint8_t> is_bottleneck_;                    // per link
  struct HeapEntry {
    double key;
    uint32_t id;
  };
  KeyedHeap links_;  // component links by fair share
  std::vector<HeapEntry> caps_;

  uint64_t flow_visits_ = 0, fast_cells_ = 0;
};

// Greedy allocation in a fixed order (the network form of SRPT used by
// pFabric's ideal simulator, Alizadeh et al. SIGCOMM 2013 §5): each flow in
// `order` takes the least capacity left on its path (at most its cap) and
// leaves the rest to the flows after it. `left` holds each link's capacity
// on entry and what is left on return; set_rate(f, rate) receives the rates.
template <typename PathOf, typename CapOf, typename SetRate>
void GreedyAllocate(const std::vector<uint32_t>& order, std::vector<double>& left, PathOf path_of, CapOf cap_of,
                    SetRate set_rate) {
  for (const uint32_t f : order) {
    const Path& p = path_of(f);
    double r = cap_of(f);
    for (uint32_t h = 0; h < p.hops; ++h) r = left[p.link[h]] < r ? left[p.link[h]] : r;
    if (!(r > 0)) r = 0;
    for (uint32_t h = 0; h < p.hops; ++h) left[p.link[h]] = r < left[p.link[h]] ? left[p.link[h]] - r : 0.0;
    set_rate(f, r);
  }
}

}  // namespace dcgym::flow
