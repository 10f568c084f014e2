// One server of the rack and its intra-node discipline.
//
// fcfs: a single queue served first-come first-served by `workers` workers
// (the "cFCFS" of RackSched and Malcolm). Each busy worker is a slot in a
// small heap ordered by the time its current activity ends.
//
// ps, quantum_us > 0: the same workers, but a task runs at most one quantum
// before it is preempted and put at the back of the queue; the worker then
// spends switch_cost_us before taking the next task (Shinjuku-style). A task
// whose quantum expires while nobody waits keeps running at no cost.
//
// ps, quantum_us == 0: egalitarian processor sharing; n tasks on c workers
// each progress at speed * min(1, c / n). Implemented with a virtual clock
// V(t) that advances at that rate: a task entering at V0 with work w leaves
// when V reaches V0 + w, so tasks leave in order of that finish tag and each
// event costs O(log n).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "dcgym/kernel/heap.hpp"
#include "dcgym/kernel/ring_buffer.hpp"
#include "dcgym/rack/config.hpp"

namespace dcgym::rack {

struct Task {
  double arrival = 0;  // time the task entered the rack (us)
  double work = 0;     // remaining work (us at speed 1)
  double size = 0;     // total work, for statistics
  uint32_t cls = 0;    // class (mixture component or task type)
  uint32_t flags = 0;

  static constexpr uint32_t kWarmup = 1;   // excluded from statistics
  static constexpr uint32_t kStarted = 2;  // has received service before
};

// Waiting-time statistics, updated when a task first receives service.
struct WaitStats {
  double sum = 0;       // total wait of measured tasks (us)
  uint64_t started = 0; // measured tasks that started service
  uint64_t waited = 0;  // ... of which waited for a worker
};

class Node {
 public:
  Node(const NodeGroup& g, const IntraNodeConfig& intra, WaitStats* waits)
      : workers_(g.workers), speed_(g.speed), capacity_(g.queue_capacity), intra_(intra),
        ideal_ps_(intra.discipline == Discipline::kPs && intra.quantum_us == 0), waits_(waits) {}

  uint32_t Workers() const { return workers_; }
  double Speed() const { return speed_; }
  // Tasks at the node, waiting or in service.
  uint32_t Outstanding() const {
    return ideal_ps_ ? static_cast<uint32_t>(jobs_.size()) : static_cast<uint32_t>(queue_.Size()) + busy_tasks_;
  }
  // Tasks waiting for a worker (ideal PS: tasks beyond the number of workers).
  uint32_t Queued() const {
    if (ideal_ps_) return jobs_.size() > workers_ ? static_cast<uint32_t>(jobs_.size()) - workers_ : 0;
    return static_cast<uint32_t>(queue_.Size());
  }
  // Workers neither serving, switching nor waiting for a fetched task.
  uint32_t IdleWorkers() const {
    if (ideal_ps_) return jobs_.size() >= workers_ ? 0 : workers_ - static_cast<uint32_t>(jobs_.size());
    return workers_ - static_cast<uint32_t>(slots_.size());
  }
  bool Full() const { return capacity_ >= 0 && static_cast<int64_t>(Queued()) >= capacity_ && IdleWorkers() == 0; }
  double NextEventTime() const { return next_time_; }

  // Accepts a task arriving at `now`. Returns false (and keeps nothing) when
  // the queue is full. Returns in `started` whether service began at once.
  bool Admit(const Task& t, double now, bool* started) {
    *started = false;
    if (ideal_ps_) {
      if (capacity_ >= 0 && jobs_.size() >= workers_ + static_cast<uint64_t>(capacity_)) return false;
      AdvanceVirtual(now);
      PushJob(PsJob{vtime_ + t.work, t});
      *started = true;
      if (!(t.flags & Task::kWarmup)) ++waits_->started;
      RefreshPs(now);
      return true;
    }
    if (slots_.size() < workers_) {
      StartTask(t, now);
      *started = true;
    } else {
      if (capacity_ >= 0 && static_cast<int64_t>(queue_.Size()) >= capacity_) return false;
      queue_.PushBack(t);
    }
    return true;
  }

  // A worker reserved at `now` receives `t` after `delay` (central dispatch).
  void Fetch(const Task& t, double now, double delay) {
    if (delay <= 0) {
      StartTask(t, now);
      return;
    }
    PushSlot(Slot{now + delay, t, Slot::kFetch});
  }

  // Processes the node's next event, due at `now` == NextEventTime(). Returns
  // true and the task in `done` when a task completed.
  bool HandleEvent(double now, Task* done) {
    if (ideal_ps_) {
      AdvanceVirtual(now);
      *done = PopJob().task;
      done->work = 0;
      if (jobs_.empty()) vtime_ = 0;  // keep tags small: restart the virtual clock
      RefreshPs(now);
      return true;
    }
    Slot s = PopSlot();
    bool completed = false;
    switch (s.kind) {
      case Slot::kFinish:
        --busy_tasks_;
        *done = s.task;
        done->work = 0;
        completed = true;
        break;
      case Slot::kSlice:
        --busy_tasks_;
        s.task.work -= intra_.quantum_us * speed_;
        if (queue_.Empty()) {  // nobody waits: keep running without a switch
          StartTask(s.task, now);
          return false;
        }
        queue_.PushBack(s.task);
        if (intra_.switch_cost_us > 0) {
          PushSlot(Slot{now + intra_.switch_cost_us, Task{}, Slot::kSwitch});
          return false;
        }
        break;
      case Slot::kSwitch:
        break;
      case Slot::kFetch:
        StartTask(s.task, now);
        return false;
    }
    if (!queue_.Empty()) StartTask(queue_.PopFront(), now);  // the freed worker takes the next task
    return completed;
  }

  // Every task held, for conservation checks: calls f(task).
  template <typename F>
  void ForEachTask(F&& f) const {
    for (const auto& j : jobs_) f(j.task);
    for (const auto& s : slots_)
      if (s.kind != Slot::kSwitch) f(s.task);
    for (size_t i = 0; i < queue_.Size(); ++i) f(queue_.At(i));
  }

 private:
  struct Slot {
    double t_end;
    Task task;
    enum Kind : uint32_t { kFinish, kSlice, kSwitch, kFetch } kind;
  };
  struct PsJob {
    double tag;  // virtual finish time
    Task task;
  };

  void StartTask(Task t, double now) {
    ++busy_tasks_;
    if (!(t.flags & Task::kStarted)) {
      t.flags |= Task::kStarted;
      if (!(t.flags & Task::kWarmup)) {
        const double wait = now - t.arrival;
        waits_->sum += wait;
        ++waits_->started;
        waits_->waited += wait > 0;
      }
    }
    const double q = intra_.quantum_us;
    if (q > 0 && t.work > q * speed_ * (1 + 1e-12)) {
      PushSlot(Slot{now + q, t, Slot::kSlice});
    } else {
      PushSlot(Slot{now + t.work / speed_, t, Slot::kFinish});
    }
  }

  // Binary heap of slots by end time (a node has few workers).
  void PushSlot(const Slot& s) {
    slots_.push_back(s);
    std::push_heap(slots_.begin(), slots_.end(), SlotLater);
    next_time_ = slots_.front().t_end;
  }
  Slot PopSlot() {
    std::pop_heap(slots_.begin(), slots_.end(), SlotLater);
    Slot s = slots_.back();
    slots_.pop_back();
    next_time_ = slots_.empty() ? kernel::kInfinity : slots_.front().t_end;
    return s;
  }
  static bool SlotLater(const Slot& a, const Slot& b) { return a.t_end > b.t_end; }

  // Ideal processor sharing.
  double Rate() const {
    const double n = static_cast<double>(jobs_.size());
    return n <= workers_ ? speed_ : speed_ * workers_ / n;
  }
  void AdvanceVirtual(double now) {
    if (!jobs_.empty()) vtime_ += (now - vtime_at_) * Rate();
    vtime_at_ = now;
  }
  void RefreshPs(double now) {
    if (jobs_.empty()) {
      next_time_ = kernel::kInfinity;
      return;
    }
    next_time_ = now + std::max(0.0, jobs_.front().tag - vtime_) / Rate();
  }
  void PushJob(const PsJob& j) {
    jobs_.push_back(j);
    std::push_heap(jobs_.begin(), jobs_.end(), JobLater);
  }
  PsJob PopJob() {
    std::pop_heap(jobs_.begin(), jobs_.end(), JobLater);
    PsJob j = jobs_.back();
    jobs_.pop_back();
    return j;
  }
  static bool JobLater(const PsJob& a, const PsJob& b) { return a.tag > b.tag; }

  uint32_t workers_;
  double speed_;
  int64_t capacity_;
  IntraNodeConfig intra_;
  bool ideal_ps_;
  WaitStats* waits_;

  double next_time_ = kernel::kInfinity;
  std::vector<Slot> slots_;
  uint32_t busy_tasks_ = 0;  // slots serving a task (not switching, not fetching)
  kernel::RingBuffer<Task> queue_;

  std::vector<PsJob> jobs_;
  double vtime_ = 0, vtime_at_ = 0;
};

}  // namespace dcgym::rack
