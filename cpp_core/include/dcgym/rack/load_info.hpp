// What each dispatcher believes about node loads.
//
// A "viewer" is anything that dispatches: the switch, a load balancer, or a
// node's load manager (Malcolm). The rack reports each node's true load (in
// the configured metric) on every change; the load-information model decides
// what each viewer sees:
//
//   fresh      the truth, at once
//   periodic   every period_us each node broadcasts its load; all viewers
//              receive the snapshot delay_us later (Malcolm's baselines)
//   piggyback  a node's load rides on each reply to the viewer that sent the
//              task, arriving delay_us after completion (RackSched INT1; with
//              the `work` metric, INT3)
//   min_only   loads arrive as with piggyback, but the viewer can only use
//              the node it currently holds as least loaded; that pointer is
//              re-derived when the held node's own reply arrives, or moves
//              to a node whose reply reports less (RackSched INT2). Every
//              task goes to that one node until a reply moves it: it herds.
//   proactive  the viewer counts the tasks it sent minus the replies it got
//              back (RackSched's "Proactive"; the LSQ of the multi-LB paper)
//
// With local_increment, a viewer adds the load of each task it sends to its
// belief until the next update ("if node A migrates a task to node B with
// queue length L, A updates its estimate of B to L + 1", Malcolm §7.1). A
// node always knows its own load exactly (own_fresh).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "dcgym/kernel/heap.hpp"
#include "dcgym/rack/config.hpp"

namespace dcgym::rack {

class LoadBoard {
 public:
  // `own_fresh`: viewer v is node v and sees its own load exactly.
  LoadBoard(const LoadInfoConfig& config, uint32_t num_viewers, uint32_t num_nodes, bool own_fresh)
      : config_(config), n_(num_nodes), viewers_(num_viewers), own_fresh_(own_fresh), truth_(num_nodes, 0.0) {
    const size_t cells = static_cast<size_t>(num_viewers) * num_nodes;
    switch (config.kind) {
      case LoadInfoKind::kFresh: break;
      case LoadInfoKind::kPeriodic:
        published_.assign(num_nodes, 0.0);
        if (config.local_increment) extra_.assign(cells, Extra{});
        break;
      case LoadInfoKind::kPiggyback:
      case LoadInfoKind::kProactive: belief_.assign(cells, 0.0); break;
      case LoadInfoKind::kMinOnly:
        belief_.assign(cells, 0.0);
        min_node_.assign(num_viewers, 0);
        break;
    }
  }

  uint32_t NumViewers() const { return viewers_; }
  uint32_t NumNodes() const { return n_; }
  LoadInfoKind Kind() const { return config_.kind; }

  void SetTruth(uint32_t node, double load) { truth_[node] = load; }
  double Truth(uint32_t node) const { return truth_[node]; }
  const std::vector<double>& Truths() const { return truth_; }

  // What viewer v believes node j's load is.
  double Belief(uint32_t v, uint32_t j) const {
    if (own_fresh_ && v == j) return truth_[j];
    switch (config_.kind) {
      case LoadInfoKind::kFresh: return truth_[j];
      case LoadInfoKind::kPeriodic: {
        double b = published_[j];
        if (!extra_.empty()) {
          const Extra& e = extra_[Cell(v, j)];
          if (e.epoch == epoch_) b += e.add;
        }
        return b;
      }
      case LoadInfoKind::kPiggyback:
      case LoadInfoKind::kProactive: return belief_[Cell(v, j)];
      case LoadInfoKind::kMinOnly: return j == min_node_[v] ? belief_[Cell(v, j)] : kernel::kInfinity;
    }
    return truth_[j];
  }

  // What viewer v believes every node's load is: Belief(v, j) for j < NumNodes() into out.
  void BeliefRow(uint32_t v, double* out) const {
    if (config_.kind == LoadInfoKind::kFresh) {
      std::copy(truth_.begin(), truth_.end(), out);
    } else if (config_.kind == LoadInfoKind::kPeriodic) {
      std::copy(published_.begin(), published_.end(), out);
      if (!extra_.empty()) {
        const Extra* e = extra_.data() + Cell(v, 0);
        for (uint32_t j = 0; j < n_; ++j)
          if (e[j].epoch == epoch_) out[j] += e[j].add;
      }
      if (own_fresh_ && v < n_) out[v] = truth_[v];
    } else {
      for (uint32_t j = 0; j < n_; ++j) out[j] = Belief(v, j);
    }
  }

  // The beliefs every viewer shares before its own corrections: the published
  // snapshot (periodic) or the truth (fresh); null for the other kinds.
  // BeliefRow(v) is this row with ForEachOwnBelief(v) applied in its order.
  const double* SharedRow() const {
    if (config_.kind == LoadInfoKind::kFresh) return truth_.data();
    if (config_.kind == LoadInfoKind::kPeriodic) return published_.data();
    return nullptr;
  }

  // f(j, belief) for the nodes j where viewer v's belief is not SharedRow()[j]
  // (when SharedRow() is not null): its local increments of this epoch, then
  // its own load when it sees it exactly.
  template <class F>
  void ForEachOwnBelief(uint32_t v, F&& f) const {
    if (config_.kind == LoadInfoKind::kPeriodic && !extra_.empty()) {
      const Extra* e = extra_.data() + Cell(v, 0);
      for (uint32_t j = 0; j < n_; ++j)
        if (e[j].epoch == epoch_) f(j, published_[j] + e[j].add);
    }
    if (own_fresh_ && v < n_) f(v, truth_[v]);
  }

  // Viewer v sent a task to node j; `add` is the task's load in the metric.
  void OnSend(uint32_t v, uint32_t j, double add) {
    switch (config_.kind) {
      case LoadInfoKind::kProactive: belief_[Cell(v, j)] += 1; break;
      case LoadInfoKind::kPeriodic:
        if (!extra_.empty()) {
          Extra& e = extra_[Cell(v, j)];
          if (e.epoch != epoch_) e = Extra{0.0, epoch_};
          e.add += add;
        }
        break;
      case LoadInfoKind::kPiggyback:
      case LoadInfoKind::kMinOnly:
        if (config_.local_increment) belief_[Cell(v, j)] += add;
        break;
      case LoadInfoKind::kFresh: break;
    }
  }

  // A reply from node j reached viewer v, carrying j's load when it was sent.
  void OnReply(uint32_t v, uint32_t j, double load) {
    switch (config_.kind) {
      case LoadInfoKind::kProactive: belief_[Cell(v, j)] -= 1; break;
      case LoadInfoKind::kPiggyback: belief_[Cell(v, j)] = load; break;
      case LoadInfoKind::kMinOnly: {
        const double* row = &belief_[Cell(v, 0)];
        belief_[Cell(v, j)] = load;
        uint32_t& m = min_node_[v];
        if (j == m) {
          for (uint32_t k = 0; k < n_; ++k)
            if (row[k] < row[m]) m = k;
        } else if (load < row[m]) {
          m = j;
        }
        break;
      }
      default: break;
    }
  }
  // A task viewer v sent to node `from` was stolen by node `to`: proactive
  // counts follow the task, so they keep matching what v has outstanding.
  void OnMove(uint32_t v, uint32_t from, uint32_t to) {
    if (config_.kind != LoadInfoKind::kProactive) return;
    belief_[Cell(v, from)] -= 1;
    belief_[Cell(v, to)] += 1;
  }

  // Whether replies carry information for this model (the rack then routes them).
  bool UsesReplies() const {
    return config_.kind == LoadInfoKind::kPiggyback || config_.kind == LoadInfoKind::kMinOnly ||
           config_.kind == LoadInfoKind::kProactive;
  }

  // A broadcast snapshot is delivered to every viewer (periodic).
  void Publish(const std::vector<double>& snapshot) {
    published_ = snapshot;
    ++epoch_;  // invalidates every local increment at once
  }

 private:
  struct Extra {
    double add = 0;
    uint64_t epoch = ~0ull;
  };
  size_t Cell(uint32_t v, uint32_t j) const { return static_cast<size_t>(v) * n_ + j; }

  LoadInfoConfig config_;
  uint32_t n_, viewers_;
  bool own_fresh_;
  std::vector<double> truth_;
  std::vector<double> published_;  // periodic: the last snapshot delivered
  std::vector<Extra> extra_;       // periodic + local_increment: per viewer and node
  uint64_t epoch_ = 0;
  std::vector<double> belief_;      // piggyback, proactive, min_only: per viewer and node
  std::vector<uint32_t> min_node_;  // min_only: per viewer, the node it sends to
};

}  // namespace dcgym::rack
