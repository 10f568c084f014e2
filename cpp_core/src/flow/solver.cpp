#include "dcgym/flow/solver.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "dcgym/kernel/check.hpp"

namespace dcgym::flow {

using kernel::Fail;
using kernel::Str;

namespace {

// Capacity left below a level that is at most this fraction of the link's
// capacity is taken as none: rounding in progressive filling must not hand
// lower levels a trickle of rate (and events billions of seconds away).
constexpr double kResidualSnap = 1e-9;

// Stamps mark "seen in this pass" without clearing arrays; on wrap-around
// the arrays are cleared once.
template <typename Clear>
uint32_t NextStamp(uint32_t& stamp, Clear clear) {
  if (++stamp == 0) {
    clear();
    stamp = 1;
  }
  return stamp;
}

}  // namespace

RateSolver::RateSolver(std::vector<double> capacity, uint32_t levels, bool incremental)
    : num_links_(static_cast<uint32_t>(capacity.size())), num_levels_(levels), incremental_(incremental) {
  if (capacity.empty()) Fail("links", "needs at least one link");
  if (levels < 1 || levels > kMaxLevels) Fail("levels", "must be in [1, " + Str(kMaxLevels) + "], got " + Str(levels));
  for (uint32_t l = 0; l < num_links_; ++l)
    if (!(capacity[l] >= 0) || !std::isfinite(capacity[l]))
      Fail("links[" + Str(l) + "].capacity", "must be a finite number >= 0, got " + Str(capacity[l]));
  const size_t cells = size_t{levels} * num_links_;
  capacity_ = capacity;
  occupied_.assign(num_links_, 0);
  adjacency_.resize(cells);
  residual_.assign(cells, 0.0);
  used_.assign(cells, 0.0);
  share_.assign(cells, 0.0);
  complex_.assign(cells, 0);
  dirty_stamp_.assign(cells, 0);
  link_rate_.assign(num_links_, 0.0);
  flows_at_.assign(levels, 0);
  dirty_.resize(levels);
  link_changed_stamp_.assign(num_links_, 0);
  link_visit_.assign(num_links_, 0);
  remaining_.assign(num_links_, 0.0);
  share_new_.assign(num_links_, 0.0);
  used_new_.assign(num_links_, 0.0);
  unfrozen_.assign(num_links_, 0);
  is_bottleneck_.assign(num_links_, 0);
}

// ------------------------------------------------------------------ changes

void RateSolver::CheckFlow(uint32_t f, const char* what) const {
  if (!Active(f)) Fail(std::string(what) + ": flow " + Str(f), "is not an active flow of the solver");
}

void RateSolver::CheckPath(const Path& path) const {
  if (path.hops < 1 || path.hops > kMaxHops)
    Fail("path", "must have 1 to " + Str(kMaxHops) + " links, got " + Str(path.hops));
  for (uint32_t h = 0; h < path.hops; ++h) {
    if (path.link[h] >= num_links_)
      Fail("path[" + Str(h) + "]", "link must be in [0, " + Str(num_links_ - 1) + "], got " + Str(path.link[h]));
    for (uint32_t g = 0; g < h; ++g)
      if (path.link[g] == path.link[h]) Fail("path[" + Str(h) + "]", "link " + Str(path.link[h]) + " repeats");
  }
}

void RateSolver::MarkDirty(uint32_t level, uint32_t link) {
  const uint32_t cell = Cell(level, link);
  if (dirty_stamp_[cell] == solve_stamp_) return;
  dirty_stamp_[cell] = solve_stamp_;
  dirty_[level].push_back(link);
  dirty_levels_ |= 1u << level;
}

void RateSolver::Attach(uint32_t f) {
  FlowState& s = flows_[f];
  const bool complex = Complex(s);
  for (uint32_t h = 0; h < s.path.hops; ++h) {
    const uint32_t link = s.path.link[h];
    const uint32_t cell = Cell(s.level, link);
    if (adjacency_[cell].empty()) {  // the cell starts being kept: its residual from the levels above
      residual_[cell] = ResidualFromAbove(s.level, link);
      occupied_[link] |= static_cast<uint8_t>(1u << s.level);
    }
    s.pos[h] = static_cast<uint32_t>(adjacency_[cell].size());
    adjacency_[cell].push_back(f);
    complex_[cell] += complex;
    MarkDirty(s.level, s.path.link[h]);
  }
}

void RateSolver::Detach(uint32_t f) {
  FlowState& s = flows_[f];
  const bool complex = Complex(s);
  for (uint32_t h = 0; h < s.path.hops; ++h) {
    const uint32_t link = s.path.link[h];
    const uint32_t cell = Cell(s.level, link);
    std::vector<uint32_t>& list = adjacency_[cell];
    const uint32_t last = list.back();
    list[s.pos[h]] = last;
    list.pop_back();
    if (list.empty()) occupied_[link] &= static_cast<uint8_t>(~(1u << s.level));
    if (last != f) {  // the flow moved into the hole: fix its index for this link
      FlowState& m = flows_[last];
      for (uint32_t g = 0; g < m.path.hops; ++g)
        if (m.path.link[g] == link) m.pos[g] = s.pos[h];
    }
    complex_[cell] -= complex;
    MarkDirty(s.level, link);
  }
}

void RateSolver::Touch(uint32_t f) {
  FlowState& s = flows_[f];
  s.bottleneck = kUnsolved;  // reported by the next Solve whatever it finds
  if (!s.touched) {
    s.touched = true;
    touched_.push_back(f);
  }
}

void RateSolver::Add(uint32_t f, const Path& path, uint32_t level, double cap) {
  if (level >= num_levels_) Fail("level", "must be in [0, " + Str(num_levels_ - 1) + "], got " + Str(level));
  if (!(cap >= 0)) Fail("cap", "must be >= 0 (or none), got " + Str(cap));
  CheckPath(path);
  if (f >= flows_.size()) flows_.resize(size_t{f} + 1);
  FlowState& s = flows_[f];
  if (s.active) Fail("flow " + Str(f), "is already active");
  s.path = path;
  s.level = level;
  s.cap = cap;
  s.active = true;
  ++num_active_;
  ++flows_at_[level];
  Attach(f);
  Touch(f);
}

void RateSolver::Remove(uint32_t f) {
  CheckFlow(f, "Remove");
  Detach(f);
  FlowState& s = flows_[f];
  s.active = false;
  s.bottleneck = kUnsolved;
  --num_active_;
  --flows_at_[s.level];
}

void RateSolver::SetLevel(uint32_t f, uint32_t level) {
  CheckFlow(f, "SetLevel");
  if (level >= num_levels_) Fail("level", "must be in [0, " + Str(num_levels_ - 1) + "], got " + Str(level));
  FlowState& s = flows_[f];
  if (s.level == level) return;
  Detach(f);
  --flows_at_[s.level];
  s.level = level;
  ++flows_at_[level];
  Attach(f);
  Touch(f);
}

void RateSolver::SetCap(uint32_t f, double cap) {
  CheckFlow(f, "SetCap");
  if (!(cap >= 0)) Fail("cap", "must be >= 0 (or none), got " + Str(cap));
  if (flows_[f].cap == cap) return;
  Detach(f);
  flows_[f].cap = cap;
  Attach(f);
  Touch(f);
}

void RateSolver::SetPath(uint32_t f, const Path& path) {
  CheckFlow(f, "SetPath");
  CheckPath(path);
  Detach(f);
  flows_[f].path = path;
  Attach(f);
  Touch(f);
}

void RateSolver::SetCapacity(uint32_t link, double capacity) {
  if (link >= num_links_) Fail("link", "must be in [0, " + Str(num_links_ - 1) + "], got " + Str(link));
  if (!(capacity >= 0) || !std::isfinite(capacity))
    Fail("capacity", "must be a finite number >= 0, got " + Str(capacity));
  capacity_[link] = capacity;
  if (occupied_[link] & 1u) residual_[link] = capacity;  // level 0's residual is the capacity
  MarkDirty(0, link);
}

// ------------------------------------------------------------------ solving

void RateSolver::Solve() {
  moved_.clear();
  reshared_.clear();
  links_changed_.clear();
  if (!incremental_)
    for (uint32_t level = 0; level < num_levels_; ++level)
      for (uint32_t l = 0; l < num_links_; ++l) MarkDirty(level, l);
  // Solving a level only marks levels below it: take the highest dirty level each time.
  while (dirty_levels_ != 0) {
    const uint32_t level = static_cast<uint32_t>(__builtin_ctz(dirty_levels_));
    dirty_levels_ &= dirty_levels_ - 1;
    SolveLevel(level);
  }
  // Flows on cells solved in O(1) were not visited: their bottleneck is their link.
  for (const uint32_t f : touched_) {
    FlowState& s = flows_[f];
    s.touched = false;
    if (s.active && s.bottleneck == kUnsolved) {
      s.bottleneck = s.path.link[0];
      moved_.push_back(f);
    }
  }
  touched_.clear();
  NextStamp(solve_stamp_, [&] { std::fill(dirty_stamp_.begin(), dirty_stamp_.end(), 0); });
  NextStamp(changed_stamp_, [&] { std::fill(link_changed_stamp_.begin(), link_changed_stamp_.end(), 0); });
}

void RateSolver::SolveLevel(uint32_t level) {
  bool region = false;  // a region needs fresh stamps; cells solved in O(1) do not
  std::vector<uint32_t>& list = dirty_[level];
  for (const uint32_t link : list) {
    const uint32_t cell = Cell(level, link);
    if (adjacency_[cell].empty()) {  // emptied (or never used): pass the capacity on, uses none
      residual_[cell] = ResidualFromAbove(level, link);
      SetResidualBelow(level, link, 0.0);
    } else if (incremental_ && complex_[cell] == 0) {
      SolveFast(level, link);
    } else {
      if (!region) {
        region = true;
        NextStamp(visit_stamp_, [&] {
          std::fill(link_visit_.begin(), link_visit_.end(), 0);
          for (auto& s : flows_) s.visit = 0;
        });
        region_links_.clear();
        region_flows_.clear();
        pending_.clear();
      }
      AddRegionLink(link);
    }
  }
  list.clear();
  if (!region) return;
  if (!incremental_) {  // the reference: every flow of the level, from scratch
    for (uint32_t l = 0; l < num_links_; ++l)
      for (const uint32_t f : adjacency_[Cell(level, l)]) AddRegionFlow(f);
  }
  ExpandRegion(level);
  FillRegion(level);
}

void RateSolver::SolveFast(uint32_t level, uint32_t link) {
  ++fast_cells_;
  const uint32_t cell = Cell(level, link);
  const size_t n = adjacency_[cell].size();
  double used = 0;
  if (n > 0) {
    const double share = residual_[cell] / static_cast<double>(n);
    if (share != share_[cell]) {
      share_[cell] = share;
      reshared_.push_back(cell);
    }
    used = residual_[cell];
  }
  SetResidualBelow(level, link, used);
}

void RateSolver::SetResidualBelow(uint32_t level, uint32_t link, double used) {
  const uint32_t cell = Cell(level, link);
  if (used != used_[cell]) {
    // Kept by differences; exact zero once the link carries nothing.
    link_rate_[link] = occupied_[link] == 0 ? 0.0 : link_rate_[link] + (used - used_[cell]);
    used_[cell] = used;
    if (link_changed_stamp_[link] != changed_stamp_) {
      link_changed_stamp_[link] = changed_stamp_;
      links_changed_.push_back(link);
    }
  }
  // Only the next level holding flows on the link needs the change.
  const uint32_t lower = occupied_[link] >> (level + 1);
  if (lower == 0) return;
  const uint32_t next_level = level + 1 + static_cast<uint32_t>(__builtin_ctz(lower));
  double below = residual_[cell] - used;
  if (!(below > kResidualSnap * capacity_[link])) below = 0;
  const uint32_t next = Cell(next_level, link);
  if (below != residual_[next]) {
    residual_[next] = below;
    MarkDirty(next_level, link);
  }
}

double RateSolver::ResidualFromAbove(uint32_t level, uint32_t link) const {
  const uint32_t above = occupied_[link] & ((1u << level) - 1);
  if (above == 0) return capacity_[link];
  const uint32_t p = 31 - static_cast<uint32_t>(__builtin_clz(above));
  const uint32_t cell = Cell(p, link);
  const double below = residual_[cell] - used_[cell];
  return below > kResidualSnap * capacity_[link] ? below : 0.0;
}

// ------------------------------------------------------------------ regions
//
// The flows to recompute at a level: those bottlenecked at a changed link
// (and the flows added or changed), then, transitively, those bottlenecked
// at a link any of them crosses, since its load from them may change. The
// other flows keep their rates and count as fixed load. Progressive filling
// of the region is then the max-min allocation if every flow satisfies the
// bottleneck condition (Bertsekas and Gallager §6.5.2: each flow is at its
// cap or has a saturated link where no flow is faster): FillRegion checks
// it for the fixed flows on the region's links and pulls in any that break
// it (a fixed flow faster than a region link's new share, or fixed load
// over a link's capacity), then fills again. A link whose residual is zero
// and did not change keeps its flows at rate zero: they are not pulled in.

void RateSolver::AddRegionLink(uint32_t link) {
  if (link_visit_[link] == visit_stamp_) return;
  link_visit_[link] = visit_stamp_;
  region_links_.push_back(link);
  pending_.push_back(link);
}

void RateSolver::AddRegionFlow(uint32_t f) {
  FlowState& s = flows_[f];
  if (s.visit == visit_stamp_) return;
  s.visit = visit_stamp_;
  region_flows_.push_back(f);
  for (uint32_t h = 0; h < s.path.hops; ++h) AddRegionLink(s.path.link[h]);
}

void RateSolver::ExpandRegion(uint32_t level) {
  while (!pending_.empty()) {
    const uint32_t l = pending_.back();
    pending_.pop_back();
    const uint32_t cell = Cell(level, l);
    if (residual_[cell] == 0 && dirty_stamp_[cell] != solve_stamp_) continue;  // its flows stay at 0
    for (size_t i = 0; i < adjacency_[cell].size(); ++i) {                     // AddRegionFlow may not touch this list
      const uint32_t f = adjacency_[cell][i];
      const uint32_t b = flows_[f].bottleneck;
      if (b == l || b == kUnsolved) AddRegionFlow(f);
    }
  }
}

void RateSolver::FillRegion(uint32_t level) {
  const auto in_region = [&](uint32_t f) { return flows_[f].visit == visit_stamp_; };
  const auto new_rate = [&](uint32_t f) {
    const FlowState& s = flows_[f];
    return s.next_bottleneck == kCapLimited ? s.cap : share_new_[s.next_bottleneck];
  };
  for (;;) {
    NextStamp(frozen_stamp_, [&] {
      for (auto& s : flows_) s.frozen = 0;
    });
    flow_visits_ += region_flows_.size();
    // Links by fair share of what the fixed flows leave, updated in place as flows freeze.
    links_.Clear();
    for (const uint32_t l : region_links_) {
      const uint32_t cell = Cell(level, l);
      double remaining = residual_[cell];
      uint32_t unfrozen = 0;
      for (const uint32_t f : adjacency_[cell]) {
        if (in_region(f))
          ++unfrozen;
        else
          remaining -= Rate(f);
      }
      remaining_[l] = remaining;
      unfrozen_[l] = unfrozen;
      is_bottleneck_[l] = 0;
      if (unfrozen > 0) links_.Set(l, remaining / unfrozen);
    }
    caps_.clear();
    for (const uint32_t f : region_flows_)
      if (flows_[f].cap != kNoCap) caps_.push_back({flows_[f].cap, f});
    std::sort(caps_.begin(), caps_.end(),
              [](const HeapEntry& a, const HeapEntry& b) { return a.key < b.key || (a.key == b.key && a.id < b.id); });

    const auto freeze = [&](uint32_t f, double rate, uint32_t bottleneck) {
      FlowState& s = flows_[f];
      s.frozen = frozen_stamp_;
      s.next_bottleneck = bottleneck;
      for (uint32_t h = 0; h < s.path.hops; ++h) {
        const uint32_t l = s.path.link[h];
        if (l == bottleneck) continue;
        remaining_[l] -= rate;
        if (--unfrozen_[l] > 0)
          links_.Set(l, remaining_[l] / unfrozen_[l]);
        else
          links_.Set(l, kNoCap);
      }
    };
    size_t next_cap = 0;
    for (;;) {
      while (next_cap < caps_.size() && flows_[caps_[next_cap].id].frozen == frozen_stamp_) ++next_cap;
      if (next_cap < caps_.size() && caps_[next_cap].key < links_.TopKey()) {
        const HeapEntry c = caps_[next_cap++];
        freeze(c.id, c.key, kCapLimited);
        continue;
      }
      if (links_.Empty()) break;
      const uint32_t l = links_.Top();
      links_.Set(l, kNoCap);
      double share = remaining_[l] / unfrozen_[l];
      if (!(share > 0)) share = 0;
      share_new_[l] = share;
      is_bottleneck_[l] = 1;
      for (const uint32_t f : adjacency_[Cell(level, l)])
        if (in_region(f) && flows_[f].frozen != frozen_stamp_) freeze(f, share, l);
      unfrozen_[l] = 0;
    }

    // The bottleneck condition for the fixed flows on the region's links.
    bool pulled = false;
    const size_t links = region_links_.size();
    for (size_t i = 0; i < links; ++i) {
      const uint32_t l = region_links_[i];
      const uint32_t cell = Cell(level, l);
      const bool over = !is_bottleneck_[l] && remaining_[l] < -kResidualSnap * capacity_[l];
      if (!is_bottleneck_[l] && !over) continue;
      const double share = is_bottleneck_[l] ? share_new_[l] : 0.0;
      for (size_t k = 0; k < adjacency_[cell].size(); ++k) {
        const uint32_t f = adjacency_[cell][k];
        if (in_region(f)) continue;
        const double r = Rate(f);
        if (!(r - share > 1e-12 * r)) continue;
        const uint32_t b = flows_[f].bottleneck;
        AddRegionFlow(f);
        if (b != kCapLimited) AddRegionLink(b);  // its old bottleneck gets the capacity it frees
        pulled = true;
      }
    }
    if (!pulled) break;
    ExpandRegion(level);
  }

  for (const uint32_t f : region_flows_) {
    FlowState& s = flows_[f];
    if (s.next_bottleneck != s.bottleneck) {
      moved_.push_back(f);
    }
  }
  // Used capacity per region link, from every flow's rate after this solve.
  for (const uint32_t l : region_links_) {
    const uint32_t cell = Cell(level, l);
    double used = 0;
    for (const uint32_t f : adjacency_[cell]) used += in_region(f) ? new_rate(f) : Rate(f);
    used_new_[l] = used;
  }
  for (const uint32_t f : region_flows_) flows_[f].bottleneck = flows_[f].next_bottleneck;
  for (const uint32_t l : region_links_) {
    const uint32_t cell = Cell(level, l);
    if (is_bottleneck_[l] && share_new_[l] != share_[cell]) {
      share_[cell] = share_new_[l];
      reshared_.push_back(cell);
    }
    SetResidualBelow(level, l, used_new_[l]);
  }
}

}  // namespace dcgym::flow
