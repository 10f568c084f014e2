// One server of the rack and its intra-node discipline.
//
// fcfs: a single queue served first-come first-served by `workers` workers
// (the "cFCFS" of RackSched and Malcolm). Each busy worker is an entry in a
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
#include "dcgym/rack/wait_queue.hpp"

namespace dcgym::rack {

struct Task {
  double arrival = 0;   // time the task entered the rack (us)
  double work = 0;      // remaining work (us at speed 1)
  double size = 0;      // total work (us at speed 1)
  uint32_t origin = 0;  // the dispatcher (switch, balancer or node) that placed it
  uint16_t cls = 0;     // class (mixture component or task type)
  uint16_t flags = 0;

  static constexpr uint16_t kWarmup = 1;   // excluded from statistics
  static constexpr uint16_t kStarted = 2;  // has received service before
  // What a worker is doing with the task (worker-heap entries only).
  static constexpr uint16_t kActivityShift = 8;
  static constexpr uint16_t kActivityMask = 3u << kActivityShift;
};

// Statistics a node updates when a task first receives service.
struct StartStats {
  double wait_sum = 0;   // total wait of measured tasks (us)
  uint64_t started = 0;  // measured tasks that started service
  uint64_t waited = 0;   // ... of which waited for a worker
};

class Node {
 public:
  // types: the task types' SLOs and priorities (one entry when untyped).
  // track_exec: keep the moving average of execution times (expected-wait loads).
  Node(const NodeGroup& g, const IntraNodeConfig& intra, const std::vector<TaskType>& types, double mean_size,
       StartStats* starts, bool track_exec = true)
      : workers_(g.workers),
        speed_(g.speed),
        capacity_(g.queue_capacity),
        intra_(intra),
        ideal_ps_(intra.discipline == Discipline::kPs && intra.quantum_us == 0),
        track_exec_(track_exec),
        starts_(starts),
        exec_estimate_(mean_size / g.speed),
        inv_speed_(1.0 / g.speed),
        queue_(intra.queueing, Slos(types), Priorities(types)),
        outstanding_by_type_(types.size() > 1 ? types.size() : 0, 0) {}

  uint32_t Workers() const { return workers_; }
  double Speed() const { return speed_; }
  // Worker time spent serving tasks up to `now` (us; switches and fetches excluded).
  double BusyTime(double now) const {
    if (ideal_ps_) return busy_time_ + BusyWorkers() * (now - accounted_at_);
    // Service time is committed when an activity starts; take back what lies ahead.
    double ahead = 0;
    busy_.ForEachTimed([&](double t_end, const Task& t) {
      if (Activity(t) == kFinish || Activity(t) == kSlice) ahead += t_end - now;
    });
    return busy_time_ - ahead;
  }
  // Total size of the tasks at the node (us at speed 1): RackSched's INT3 load.
  double OutstandingWork() const { return outstanding_work_; }
  // Moving average of observed execution times (weight 1/64, as Malcolm's code).
  double ExecEstimate() const { return exec_estimate_; }
  // Tasks of type k at the node, waiting or in service (typed racks only).
  uint32_t OutstandingOfType(uint32_t k) const {
    return outstanding_by_type_.empty() ? Outstanding() : outstanding_by_type_[k];
  }
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
    return workers_ - busy_.Size();
  }
  double NextEventTime() const { return next_time_; }

  // Accepts a task arriving at `now`; returns false (keeping nothing) when the
  // node already holds queue_capacity tasks beyond its busy workers.
  bool Admit(const Task& t, double now) {
    if (ideal_ps_) {
      Account(now);
      if (capacity_ >= 0 && jobs_.size() >= workers_ + static_cast<uint64_t>(capacity_)) return false;
      outstanding_work_ += t.size;
      AdvanceVirtual(now);
      PsJob j{vtime_ + t.work, t};
      OnFirstStart(j.task, now);
      PushJob(j);
      if (!outstanding_by_type_.empty()) ++outstanding_by_type_[t.cls];
      RefreshPs(now);
      return true;
    }
    if (busy_.Size() < workers_) {
      StartTask(t, now);
    } else {
      if (capacity_ >= 0 && static_cast<int64_t>(queue_.Size()) >= capacity_) return false;
      queue_.Push(t);
    }
    outstanding_work_ += t.size;
    if (!outstanding_by_type_.empty()) ++outstanding_by_type_[t.cls];
    return true;
  }

  // Removes the oldest waiting task (work stealing) if allowed(task); false
  // if none waits or the thief may not run it (locality).
  template <typename Allowed>
  bool StealQueued(Task* t, const Allowed& allowed) {
    if (ideal_ps_ || queue_.Empty() || !allowed(queue_.Oldest())) return false;
    *t = queue_.PopOldest();
    outstanding_work_ -= t->size;
    if (!outstanding_by_type_.empty()) --outstanding_by_type_[t->cls];
    return true;
  }

  // Changes the workers' speed at `now`: work in progress continues at the
  // new speed (a time slice already under way keeps its length).
  void SetSpeed(double speed, double now) {
    inv_speed_ = 1.0 / speed;
    if (ideal_ps_) {
      Account(now);
      AdvanceVirtual(now);
      speed_ = speed;
      RefreshPs(now);
      return;
    }
    const double ratio = speed_ / speed;
    speed_ = speed;
    busy_.Retime([&](double t_end, const Task& t) {
      if (Activity(t) != kFinish) return t_end;
      const double new_end = now + (t_end - now) * ratio;
      busy_time_ += new_end - t_end;  // the committed service time changes with the speed
      return new_end;
    });
    next_time_ = busy_.TopTime();
  }

  // Exact remaining work at the node (us at speed 1), walking its tasks.
  double RemainingWork(double now) const {
    double w = 0;
    queue_.ForEach([&w](const Task& t) { w += t.work; });
    busy_.ForEachTimed([&](double t_end, const Task& t) {
      if (Activity(t) == kFinish)
        w += (t_end - now) * speed_;
      else if (Activity(t) == kSlice)
        w += t.work + (t_end - now) * speed_;
      else if (Activity(t) == kFetch)
        w += t.work;
    });
    if (ideal_ps_) {
      const double v = vtime_ + (now - vtime_at_) * (jobs_.empty() ? 0.0 : Rate());
      for (const auto& j : jobs_) w += j.tag - v;
    }
    return w;
  }

  // An idle worker, reserved at `now`, receives `t` after `delay` (central
  // dispatch pulling from a global queue).
  void Fetch(const Task& t, double now, double delay) {
    if (delay <= 0)
      StartTask(t, now);
    else
      Occupy(now + delay, t, kFetch);
  }

  // Processes the node's next event, due at `now` == NextEventTime(). Returns
  // true, with the task in `done`, when a task completed.
  bool HandleEvent(double now, Task* done) {
    if (ideal_ps_) {
      Account(now);
      AdvanceVirtual(now);
      *done = PopJob().task;
      if (jobs_.empty()) vtime_ = 0;  // keep tags small: restart the virtual clock
      RefreshPs(now);
      OnComplete(*done);
      return true;
    }
    Task t = busy_.Pop();
    next_time_ = busy_.TopTime();
    bool completed = false;
    switch (Activity(t)) {
      case kFinish:
        --busy_tasks_;
        *done = t;
        completed = true;
        OnComplete(t);
        break;
      case kSlice:  // the slice's work was deducted when it started
        --busy_tasks_;
        if (queue_.Empty()) {  // nobody waits: keep running without a switch
          StartTask(t, now);
          return false;
        }
        queue_.PushBack(t);
        if (intra_.switch_cost_us > 0) {
          Occupy(now + intra_.switch_cost_us, Task{}, kSwitch);
          return false;
        }
        break;
      case kSwitch: break;
      case kFetch: StartTask(t, now); return false;
    }
    if (!queue_.Empty()) StartTask(queue_.PopNext(now), now);  // the freed worker takes the next task
    return completed;
  }

  // Calls f(task) for every task held (conservation checks).
  template <typename F>
  void ForEachTask(F&& f) const {
    for (const auto& j : jobs_) f(j.task);
    busy_.ForEach([&f](const Task& t) {
      if (Activity(t) != kSwitch) f(t);
    });
    queue_.ForEach(f);
  }

 private:
  static std::vector<double> Slos(const std::vector<TaskType>& types) {
    std::vector<double> v;
    for (const auto& t : types) v.push_back(t.slo_us);
    return v;
  }
  static std::vector<int32_t> Priorities(const std::vector<TaskType>& types) {
    std::vector<int32_t> v;
    for (const auto& t : types) v.push_back(t.priority);
    return v;
  }

  enum ActivityKind : uint32_t { kFinish = 0, kSlice = 1, kSwitch = 2, kFetch = 3 };
  static ActivityKind Activity(const Task& t) {
    return static_cast<ActivityKind>((t.flags & Task::kActivityMask) >> Task::kActivityShift);
  }
  struct PsJob {
    double tag;  // virtual finish time
    Task task;
  };

  void Occupy(double until, Task t, ActivityKind a) {
    t.flags = static_cast<uint16_t>((t.flags & ~Task::kActivityMask) | (a << Task::kActivityShift));
    busy_.Push(until, t);
    next_time_ = busy_.TopTime();
  }

  void OnFirstStart(Task& t, double now) {
    if (t.flags & Task::kStarted) return;
    t.flags |= Task::kStarted;
    if (t.flags & Task::kWarmup) return;
    const double wait = now - t.arrival;
    starts_->wait_sum += wait;
    ++starts_->started;
    starts_->waited += wait > 0;
  }

  void StartTask(Task t, double now) {
    ++busy_tasks_;
    OnFirstStart(t, now);
    const double q = intra_.quantum_us;
    if (q > 0 && t.work > q * speed_ * (1 + 1e-12)) {
      t.work -= q * speed_;
      busy_time_ += q;
      Occupy(now + q, t, kSlice);
    } else {
      const double service = t.work / speed_;
      busy_time_ += service;
      Occupy(now + service, t, kFinish);
    }
  }

  double BusyWorkers() const {
    if (ideal_ps_) return static_cast<double>(std::min<size_t>(jobs_.size(), workers_));
    return busy_tasks_;
  }
  void Account(double now) {
    busy_time_ += BusyWorkers() * (now - accounted_at_);
    accounted_at_ = now;
  }

  void OnComplete(const Task& t) {
    outstanding_work_ -= t.size;
    if (!outstanding_by_type_.empty()) --outstanding_by_type_[t.cls];
    if (outstanding_work_ < 1e-9 * t.size) outstanding_work_ = 0;  // no drift below zero
    if (track_exec_) exec_estimate_ += (t.size * inv_speed_ - exec_estimate_) * (1.0 / 64);
  }

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
    next_time_ = jobs_.empty() ? kernel::kInfinity : now + std::max(0.0, jobs_.front().tag - vtime_) / Rate();
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
  bool track_exec_;
  StartStats* starts_;

  double next_time_ = kernel::kInfinity;
  double busy_time_ = 0, accounted_at_ = 0;
  double outstanding_work_ = 0;
  double exec_estimate_;
  double inv_speed_;
  kernel::SlotHeap<Task> busy_;  // busy workers, by the time their activity ends
  uint32_t busy_tasks_ = 0;      // busy workers serving a task (not switching or fetching)
  WaitQueue<Task> queue_;
  std::vector<uint32_t> outstanding_by_type_;  // typed racks only

  std::vector<PsJob> jobs_;
  double vtime_ = 0, vtime_at_ = 0;
};

}  // namespace dcgym::rack
