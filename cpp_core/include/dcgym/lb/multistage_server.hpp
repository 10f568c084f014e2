// One application server of the multi-LB model: a CPU queue and an IO queue.
//
// Multi-LB paper (Yao et al., CIKM 2022), App. C.1, eq. (42). CPU is blocked processor
// sharing: at most p x mp_level jobs are in CPU service, each progressing at
// speed x min(p / l, 1) with p workers and l jobs in service; the others wait
// in a backlog queue until a CPU slot frees up. IO is processor sharing over
// one disk: each of the l_io jobs in IO progresses at 1 / l_io.
//
// Each queue is a PsResource: a virtual clock V(t) that advances at the
// per-job rate, and a min-heap of finish tags (V at entry + work). A job
// leaves when V reaches its tag, so a change in the number of jobs costs
// O(log l) and never reschedules the other jobs (the rate change is absorbed
// by V). The same sums give the remaining work in service exactly: sum of
// tags - l x V.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "dcgym/kernel/heap.hpp"

namespace dcgym::lb {

class PsResource {
 public:
  // `parallel` jobs run at full `speed`; more share parallel x speed equally.
  PsResource(double parallel, double speed) : c_(parallel), s_(speed) {}

  uint32_t Size() const { return static_cast<uint32_t>(jobs_.size()); }
  bool Empty() const { return jobs_.empty(); }
  // Per-job rate with the current number of jobs.
  double Rate() const {
    const double n = static_cast<double>(jobs_.size());
    return n <= c_ ? s_ : s_ * c_ / n;
  }

  void Add(double now, uint32_t id, double work) {
    Advance(now);
    const double tag = v_ + work;
    tag_sum_ += tag;
    jobs_.push_back(Job{tag, id});
    std::push_heap(jobs_.begin(), jobs_.end(), Later);
  }

  // Removes the job with the smallest tag (the one finishing at NextTime()).
  uint32_t PopFirst(double now) {
    Advance(now);
    std::pop_heap(jobs_.begin(), jobs_.end(), Later);
    const Job j = jobs_.back();
    jobs_.pop_back();
    tag_sum_ -= j.tag;
    if (jobs_.empty()) v_ = tag_sum_ = 0;  // restart the clock: keeps tags small
    return j.id;
  }

  double NextTime() const {
    if (jobs_.empty()) return kernel::kInfinity;
    return v_at_ + std::max(0.0, jobs_.front().tag - v_) / Rate();
  }

  // Work (at speed 1) still to do for the jobs in service.
  double Remaining(double now) const {
    if (jobs_.empty()) return 0;
    const double v = v_ + (now - v_at_) * Rate();
    return std::max(0.0, tag_sum_ - static_cast<double>(jobs_.size()) * v);
  }

  // From `now` on, `parallel` jobs run at `speed` (a capacity change): the
  // clock is brought to `now` at the old rate, so the work done so far stays.
  void SetSpeed(double now, double speed) {
    Advance(now);
    s_ = speed;
  }

  // Integral over time of min(l, parallel) / parallel: the busy fraction.
  double BusyTime(double now) const {
    const double n = static_cast<double>(jobs_.size());
    return busy_ + (now - v_at_) * std::min(n, c_) / c_;
  }

 private:
  struct Job {
    double tag;
    uint32_t id;
  };
  static bool Later(const Job& a, const Job& b) { return a.tag > b.tag; }

  void Advance(double now) {
    const double n = static_cast<double>(jobs_.size());
    busy_ += (now - v_at_) * std::min(n, c_) / c_;
    if (!jobs_.empty()) v_ += (now - v_at_) * Rate();
    v_at_ = now;
  }

  double c_, s_;
  std::vector<Job> jobs_;
  double v_ = 0, v_at_ = 0, tag_sum_ = 0, busy_ = 0;
};

class Server {
 public:
  Server(uint32_t workers, double speed, uint32_t mp_level)
      : workers_(workers), speed_(speed), slots_(workers * mp_level), cpu_(workers, speed), io_(1, 1) {}

  uint32_t Workers() const { return workers_; }
  double Speed() const { return speed_; }
  // Jobs held: in CPU service, waiting for a CPU slot, or in IO.
  uint32_t Jobs() const { return cpu_.Size() + static_cast<uint32_t>(wait_.Size()) + io_.Size(); }
  uint32_t CpuJobs() const { return cpu_.Size(); }
  uint32_t Waiting() const { return static_cast<uint32_t>(wait_.Size()); }
  uint32_t IoJobs() const { return io_.Size(); }
  double NextEventTime() const { return std::min(cpu_.NextTime(), io_.NextTime()); }
  // The CPU speed per worker from `now` on (co-located work taking a share of
  // each CPU, App. E.2.3); IO is unaffected.
  void SetCpuSpeed(double now, double speed) {
    speed_ = speed;
    cpu_.SetSpeed(now, speed);
  }

  // A job starts a CPU stage of `work`; it waits if all slots are taken.
  // Waiting jobs are served in increasing `key` (ties first come first
  // served): the entry time gives FIFO, the server arrival time the order of
  // the authors' simulator.
  void EnterCpu(double now, uint32_t id, double work, double key) {
    if (cpu_.Size() < slots_) {
      cpu_.Add(now, id, work);
    } else {
      wait_.Push(key, Waiting_{id, work});
      wait_work_ += work;
    }
  }
  void EnterIo(double now, uint32_t id, double work) { io_.Add(now, id, work); }

  // Ends the stage due at `now` (== NextEventTime()); returns the job and
  // whether the stage was a CPU stage. A freed CPU slot goes to the first
  // waiting job.
  uint32_t EndStage(double now, bool* was_cpu) {
    *was_cpu = cpu_.NextTime() <= io_.NextTime();
    if (!*was_cpu) return io_.PopFirst(now);
    const uint32_t id = cpu_.PopFirst(now);
    if (!wait_.Empty()) {
      const Waiting_ w = wait_.Pop().payload;
      wait_work_ = wait_.Empty() ? 0 : wait_work_ - w.work;
      cpu_.Add(now, w.id, w.work);
    }
    return id;
  }

  // Expected time to finish all the work committed to this server, the
  // Oracle's score (App. C.3): CPU work / (p x speed) + IO work, counting
  // the stages not yet started (`future_*`, kept by the simulator).
  double DrainTime(double now, double future_cpu, double future_io) const {
    const double cpu = cpu_.Remaining(now) + wait_work_ + future_cpu;
    return cpu / (workers_ * speed_) + io_.Remaining(now) + future_io;
  }
  double CpuBusyTime(double now) const { return cpu_.BusyTime(now); }

 private:
  struct Waiting_ {
    uint32_t id;
    double work;
  };
  uint32_t workers_;
  double speed_;
  uint32_t slots_;  // p x mp_level
  PsResource cpu_, io_;
  kernel::EventQueue<Waiting_> wait_;  // keyed by the wait order
  double wait_work_ = 0;
};

}  // namespace dcgym::lb
