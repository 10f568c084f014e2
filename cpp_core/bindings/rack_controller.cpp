// Binding of the native runtime's learning side: RackController (Malcolm's
// policy, and optionally its learning, driving a RackSim in C++), FillController
// (a `fill` policy file driving a RackSim), TaskFill (rack_v0's `fill`
// actions: gains asked at every arriving task) and
// MalcolmLearner (one update on a given batch, for tests). See
// docs/policy_runtime.md; the runtime's timing loop is a program of its own,
// benchmarks/policy_runtime.cpp.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "convert.hpp"
#include "dcgym/rack/controller.hpp"
#include "dcgym/rack/fill_controller.hpp"
#include "dcgym/rack/task_fill.hpp"
#include "dcgym/runtime/learner.hpp"
#include "dcgym/runtime/policy_file.hpp"

namespace py = pybind11;

namespace dcgym::bindings {
namespace {

using namespace dcgym::runtime;
using dcgym::rack::ControllerOptions;
using dcgym::rack::RackController;
using dcgym::rack::RewardCosts;
using dcgym::rack::RunStats;
using FArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using DArray = py::array_t<double, py::array::c_style | py::array::forcecast>;

// MalcolmConfig's learning settings (agents/malcolm/malcolm.py), then RackEnvConfig's that the controller uses.
constexpr const char* kLearnerKeys[] = {"variant",      "gamma",        "trace_lambda",   "average_reward_step",
                                        "reward_scale", "load_scale",   "minibatch_size", "consensus_period",
                                        "critic_basis", "actor_basis",  "lr_critic",      "lr_actor",
                                        "adam_betas",   "adam_epsilon", "weight_decay"};
constexpr const char* kControllerKeys[] = {"heartbeat_us",   "warmup_us",  "obs_clip",          "max_logit", "reward",
                                           "migration_cost", "steal_cost", "failed_steal_cost", "drop_cost", "learn"};

void ReadBasis(const py::dict& d, const char* key, Basis& out) {
  if (Has(d, key))
    out = Choice<Basis>(Get<std::string>(d, key, "options"), Path("options", key),
                        {{"raw", Basis::kRaw},
                         {"sort", Basis::kSort},
                         {"customized", Basis::kCustomized},
                         {"quadratic", Basis::kQuadratic}});
}

// MalcolmConfig's names; the defaults are LearnerConfig's. Not validated (the fill learner checks its own way).
LearnerConfig ParseLearnerUnchecked(const py::dict& d) {
  LearnerConfig c;
  if (Has(d, "variant"))
    c.variant = Choice<Variant>(Get<std::string>(d, "variant", "options"), "options.variant",
                                {{"paper", Variant::kPaper}, {"code", Variant::kCode}});
  c.gamma = Get<double>(d, "gamma", "options", c.gamma);
  if (Has(d, "trace_lambda")) c.trace_lambda = Get<double>(d, "trace_lambda", "options");
  c.average_reward_step = Get<double>(d, "average_reward_step", "options", c.average_reward_step);
  c.reward_scale = Get<double>(d, "reward_scale", "options", c.reward_scale);
  c.load_scale = Get<float>(d, "load_scale", "options", c.load_scale);
  c.minibatch_size = Get<uint32_t>(d, "minibatch_size", "options", c.minibatch_size);
  c.consensus_period = Get<uint32_t>(d, "consensus_period", "options", c.consensus_period);
  ReadBasis(d, "critic_basis", c.critic_basis);
  ReadBasis(d, "actor_basis", c.actor_basis);
  c.lr_critic = Get<float>(d, "lr_critic", "options", c.lr_critic);
  c.lr_actor = Get<float>(d, "lr_actor", "options", c.lr_actor);
  const auto betas = Get<std::pair<float, float>>(d, "adam_betas", "options", {c.adam.beta1, c.adam.beta2});
  c.adam.beta1 = betas.first;
  c.adam.beta2 = betas.second;
  c.adam.eps = Get<float>(d, "adam_epsilon", "options", c.adam.eps);
  c.adam.weight_decay = Get<float>(d, "weight_decay", "options", c.adam.weight_decay);
  return c;
}

LearnerConfig ParseLearner(const py::dict& d) {
  LearnerConfig c = ParseLearnerUnchecked(d);
  c.Validate();
  return c;
}

// RackEnvConfig's names; the defaults are ControllerOptions', the reward DefaultReward's of the variant.
ControllerOptions ParseController(const py::dict& d, bool validate_learner = true) {
  std::vector<const char*> keys(std::begin(kLearnerKeys), std::end(kLearnerKeys));
  keys.insert(keys.end(), std::begin(kControllerKeys), std::end(kControllerKeys));
  OnlyKeys(d, "options", keys);
  ControllerOptions o;
  o.learner = validate_learner ? ParseLearner(d) : ParseLearnerUnchecked(d);
  o.heartbeat_us = Get<double>(d, "heartbeat_us", "options", o.heartbeat_us);
  o.warmup_us = Get<double>(d, "warmup_us", "options", o.warmup_us);
  o.obs_clip = Get<float>(d, "obs_clip", "options", o.obs_clip);
  o.max_logit = Get<float>(d, "max_logit", "options", o.max_logit);
  o.reward = Has(d, "reward") ? rack::game::RewardNamed(Get<std::string>(d, "reward", "options"), "options.reward")
                              : rack::DefaultReward(o.learner.variant);
  o.costs = RewardCosts::Default(o.reward);
  o.costs.migration = Get<double>(d, "migration_cost", "options", o.costs.migration);
  o.costs.steal = Get<double>(d, "steal_cost", "options", o.costs.steal);
  o.costs.failed_steal = Get<double>(d, "failed_steal_cost", "options", o.costs.failed_steal);
  o.costs.drop = Get<double>(d, "drop_cost", "options", o.costs.drop);
  o.learn = Get<bool>(d, "learn", "options", o.learn);
  return o;
}

using Actor = MalcolmLearner::Actor;

// Copies (N, F_c), (N, N, F_a), (N, N, F_a) arrays into the learner; None keeps a block.
void SetParameters(MalcolmLearner& l, const py::object& critic, const py::object& migration,
                   const py::object& stealing) {
  const py::ssize_t n = static_cast<py::ssize_t>(l.NumNodes());
  const py::ssize_t fc = static_cast<py::ssize_t>(l.CriticFeatures()), fa = static_cast<py::ssize_t>(l.ActorFeatures());
  if (!critic.is_none()) {
    FArray a = critic.cast<FArray>();
    CheckShape(a, {n, fc}, "critic");
    for (py::ssize_t i = 0; i < n; ++i) std::copy(a.data() + i * fc, a.data() + (i + 1) * fc, l.At(i).critic.begin());
  }
  auto actor = [&](const py::object& obj, const char* what, Actor which) {
    if (obj.is_none()) return;
    FArray a = obj.cast<FArray>();
    CheckShape(a, {n, n, fa}, what);
    for (py::ssize_t i = 0; i < n; ++i) l.ImportActor(l.At(i).actor, which, a.data() + i * n * fa);
  };
  actor(migration, "migration", Actor::kMigration);
  actor(stealing, "stealing", Actor::kStealing);
}

// One actor of a packed block as a row-major (N, F_a) array.
py::array_t<float> ExportActor(const MalcolmLearner& l, const AlignedVector<float>& packed, Actor which) {
  py::array_t<float> out({static_cast<py::ssize_t>(l.NumNodes()), static_cast<py::ssize_t>(l.ActorFeatures())});
  l.ExportActor(packed, which, out.mutable_data());
  return out;
}

py::dict Parameters(const MalcolmLearner& l) {
  const py::ssize_t n = static_cast<py::ssize_t>(l.NumNodes());
  const py::ssize_t fc = static_cast<py::ssize_t>(l.CriticFeatures()), fa = static_cast<py::ssize_t>(l.ActorFeatures());
  py::array_t<float> critic({n, fc}), migration({n, n, fa}), stealing({n, n, fa});
  for (py::ssize_t i = 0; i < n; ++i) {
    const auto& node = l.At(i);
    std::copy(node.critic.begin(), node.critic.end(), critic.mutable_data() + i * fc);
    l.ExportActor(node.actor, Actor::kMigration, migration.mutable_data() + i * n * fa);
    l.ExportActor(node.actor, Actor::kStealing, stealing.mutable_data() + i * n * fa);
  }
  py::dict d;
  d["critic"] = critic;
  d["migration"] = migration;
  d["stealing"] = stealing;
  return d;
}

std::unique_ptr<MalcolmLearner> MakeLearner(size_t n, const LearnerConfig& c, const py::object& critic,
                                            const py::object& migration, const py::object& stealing, uint64_t seed) {
  auto l = std::make_unique<MalcolmLearner>(n, c);
  l->InitUniform(seed);
  SetParameters(*l, critic, migration, stealing);
  return l;
}

// ------------------------------------------------------------------ learner

struct PyLearner {
  std::unique_ptr<MalcolmLearner> learner;

  // Node i's gradients for a batch of raw observations (D, >= N; times load_scale here, as
  // MalcolmRLModule.loads), rewards (D,), counts (D, N); optionally applies AdamW.
  py::dict Step(size_t i, const FArray& obs, const FArray& next_obs, const DArray& rewards, const FArray& migrate,
                const FArray& steal, const py::object& episode_start, const py::object& terminated, bool apply) {
    auto& l = *learner;
    const size_t n = l.NumNodes();
    if (obs.ndim() != 2 || obs.shape(1) < static_cast<py::ssize_t>(n))
      throw std::invalid_argument("obs: must have shape (D, >= N)");
    const size_t d = static_cast<size_t>(obs.shape(0));
    auto check = [&](const py::array& a, const char* what, py::ssize_t cols) {
      if (static_cast<size_t>(a.shape(0)) != d || (cols > 0 && (a.ndim() != 2 || a.shape(1) < cols)) ||
          (cols == 0 && a.ndim() != 1))
        throw std::invalid_argument(std::string(what) + ": wrong shape for a batch of " + std::to_string(d));
    };
    check(next_obs, "next_obs", static_cast<py::ssize_t>(n));
    check(rewards, "rewards", 0);
    check(migrate, "migrate_counts", static_cast<py::ssize_t>(n));
    check(steal, "steal_counts", static_cast<py::ssize_t>(n));
    const float scale = l.Config().load_scale;
    std::vector<float> x(d * n), nx(d * n), mg(d * n), st(d * n);
    for (size_t t = 0; t < d; ++t)
      for (size_t j = 0; j < n; ++j) {
        x[t * n + j] = obs.at(t, j) * scale;
        nx[t * n + j] = next_obs.at(t, j) * scale;
        mg[t * n + j] = migrate.at(t, j);
        st[t * n + j] = steal.at(t, j);
      }
    auto flags = [&](const py::object& o, const char* what) {
      std::vector<uint8_t> f;
      if (o.is_none()) return f;
      FArray a = o.cast<FArray>();
      if (a.ndim() != 1 || static_cast<size_t>(a.shape(0)) != d)
        throw std::invalid_argument(std::string(what) + ": must have shape (D,)");
      for (size_t t = 0; t < d; ++t) f.push_back(a.at(t) != 0.0f);
      return f;
    };
    const auto start = flags(episode_start, "episode_start"), term = flags(terminated, "terminated");
    Batch b;
    b.d = d;
    b.x = x.data();
    b.next_x = nx.data();
    b.reward = rewards.data();
    b.migrate = mg.data();
    b.steal = st.data();
    b.episode_start = start.empty() ? nullptr : start.data();
    b.terminated = term.empty() ? nullptr : term.data();
    l.Reserve(d);
    l.ComputeGradients(i, b);
    py::dict out;
    const auto& node = l.At(i);
    out["critic"] = py::array_t<float>(static_cast<py::ssize_t>(node.grad_critic.size()), node.grad_critic.data());
    out["migration"] = ExportActor(l, node.grad_actor, Actor::kMigration);
    out["stealing"] = ExportActor(l, node.grad_actor, Actor::kStealing);
    if (apply) l.ApplyGradients(i);
    return out;
  }
};

// ------------------------------------------------------------------ controller

struct PyController {
  py::object sim;  // the RackSim (kept alive; the controller holds a reference to it)
  std::unique_ptr<MalcolmLearner> learner;
  std::unique_ptr<RackController> controller;
};

struct PyFillController {
  py::object sim;
  std::unique_ptr<dcgym::rack::FillController> controller;
};

// A learning run's heartbeats, imbalance_mean (eq. 1 on the true loads), reward_mean and the learner's updates.
void AddRunStats(py::dict& out, const RunStats& s, std::uint64_t updates) {
  out["heartbeats"] = s.heartbeats;
  out["imbalance_mean"] = s.heartbeats ? s.imbalance_sum / static_cast<double>(s.heartbeats) : std::nan("");
  out["reward_mean"] = s.heartbeats ? s.reward_sum / static_cast<double>(s.heartbeats) : std::nan("");
  out["num_updates"] = updates;
}

py::dict RunFill(PyFillController& c, int64_t heartbeats) {
  const auto count = Count(heartbeats, "heartbeats");
  RunStats s;
  {
    py::gil_scoped_release release;
    s = c.controller->Run(count);
  }
  py::dict out = c.sim.attr("results")();
  if (const auto* l = c.controller->Learner()) {
    AddRunStats(out, s, l->NumUpdates());
  }
  return out;
}

// The bytes of a `fill` policy file, parsed; ValueError for another kind or a bad file.
dcgym::runtime::FillPolicy ParseFillPolicy(const py::bytes& policy) {
  const std::string data = policy;
  dcgym::runtime::Policy loaded;
  std::string error;
  if (!dcgym::runtime::ParsePolicy(data.data(), data.size(), &loaded, &error)) throw py::value_error(error);
  if (loaded.fill() == nullptr)
    throw py::value_error("policy: a " + std::string(dcgym::runtime::PolicyKindName(loaded.kind())) +
                          " policy; expected fill");
  return *loaded.fill();
}

// A FillLearner with its own copy of a fill policy: one update on given arrays (the C++ half of the comparison
// with the torch learner).
struct PyFillLearner {
  dcgym::runtime::FillPolicy policy;
  std::unique_ptr<dcgym::runtime::FillLearner> learner;

  py::dict Update(size_t i, const FArray& x, const DArray& levels, const DArray& arrivals, const DArray& rewards,
                  const FArray& migrate, const py::object& tasks) {
    auto& l = *learner;
    const auto n = static_cast<py::ssize_t>(l.NumNodes());
    const auto d = rewards.ndim() == 1 ? rewards.shape(0) : 0;
    CheckShape(x, {d + 1, n}, "x");
    CheckShape(levels, {d, n}, "levels");
    CheckShape(arrivals, {d}, "arrivals");
    CheckShape(migrate, {d, n}, "migrate_counts");
    dcgym::runtime::FillBatch b;
    b.d = static_cast<size_t>(d);
    b.x = x.data();
    b.levels = levels.data();
    b.arrivals = arrivals.data();
    b.reward = rewards.data();
    b.migrate = migrate.data();
    // Per task: {"offsets": (D + 1,), "levels": (K, N), "arrivals": (K,), "dest": (K,)}.
    using UArray = py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>;
    UArray offsets, dest;
    DArray task_levels, task_arrivals;
    if (!tasks.is_none()) {
      py::dict t = Mapping(tasks, "tasks");
      OnlyKeys(t, "tasks", {"offsets", "levels", "arrivals", "dest"});
      offsets = UArray::ensure(t["offsets"]);
      dest = UArray::ensure(t["dest"]);
      task_levels = DArray::ensure(t["levels"]);
      task_arrivals = DArray::ensure(t["arrivals"]);
      if (!offsets || !dest || !task_levels || !task_arrivals)
        throw std::invalid_argument("tasks: offsets, levels, arrivals and dest must be numeric arrays");
      const auto k = dest.ndim() == 1 ? dest.shape(0) : -1;
      CheckShape(offsets, {d + 1}, "tasks.offsets");
      CheckShape(dest, {k}, "tasks.dest");
      CheckShape(task_levels, {k, n}, "tasks.levels");
      CheckShape(task_arrivals, {k}, "tasks.arrivals");
      const std::uint32_t* o = offsets.data();
      for (py::ssize_t r = 0; r <= d; ++r)
        if ((r == 0 ? o[0] != 0 : o[r] < o[r - 1]) || o[r] > static_cast<std::uint32_t>(k))
          throw std::invalid_argument("tasks.offsets: must start at 0, not decrease and end at most at K");
      b.task_offsets = o;
      b.task_dest = dest.data();
      b.task_levels = task_levels.data();
      b.task_arrivals = task_arrivals.data();
    }
    l.ComputeGradients(i, b, policy);
    const auto& node = l.At(i);
    py::dict out;
    out["critic"] = py::array_t<float>(static_cast<py::ssize_t>(node.grad_critic.size()), node.grad_critic.data());
    py::array_t<float> gains(
        {static_cast<py::ssize_t>(FillRows(l.NumNodes())), static_cast<py::ssize_t>(kFillFeatures)});
    std::copy(node.grad_gains.begin(), node.grad_gains.end(), gains.mutable_data());
    out["gains"] = gains;
    l.ApplyGradients(i, policy);
    return out;
  }
};

// A fill policy's gains (N, 2N + 3, 4).
py::array_t<float> FillGains(const dcgym::runtime::FillPolicy& p) {
  const auto n = static_cast<py::ssize_t>(p.num_nodes()), rows = static_cast<py::ssize_t>(FillRows(p.num_nodes()));
  py::array_t<float> out({n, rows, static_cast<py::ssize_t>(kFillFeatures)});
  std::copy(p.gains(0), p.gains(0) + n * rows * static_cast<py::ssize_t>(kFillFeatures), out.mutable_data());
  return out;
}

// A fill learner's critics (N, F_c).
py::array_t<float> FillCritics(const dcgym::runtime::FillLearner& l) {
  const auto n = static_cast<py::ssize_t>(l.NumNodes()), fc = static_cast<py::ssize_t>(l.CriticFeatures());
  py::array_t<float> critic({n, fc});
  for (py::ssize_t i = 0; i < n; ++i)
    std::copy(l.At(i).critic.begin(), l.At(i).critic.end(), critic.mutable_data() + i * fc);
  return critic;
}

// The controller's gains and, when learning, its critics.
py::dict FillParameters(const PyFillController& c) {
  py::dict d;
  d["gains"] = FillGains(c.controller->Policy());
  if (const auto* l = c.controller->Learner()) d["critic"] = FillCritics(*l);
  return d;
}

py::tuple Tables(std::size_t n, const std::vector<double>& migration, const std::vector<double>& stealing) {
  const auto k = static_cast<py::ssize_t>(n);
  return py::make_tuple(py::array_t<double>({k, k}, migration.data()), py::array_t<double>({k, k}, stealing.data()));
}

// rack_v0's `fill` actions on one RackSim: a fill policy whose gains the agents set every heartbeat, asked at every
// task that arrives at a node, recording each decision.
struct PyTaskFill {
  py::object sim;
  dcgym::runtime::FillPolicy policy;
  std::unique_ptr<dcgym::rack::TaskFill> fill;  // after policy: unhooked before the policy dies

  void SetGains(const FArray& gains) {
    const auto n = static_cast<py::ssize_t>(policy.num_nodes());
    const auto rows = static_cast<py::ssize_t>(FillRows(policy.num_nodes()));
    CheckShape(gains, {n, rows, static_cast<py::ssize_t>(kFillFeatures)}, "gains");
    const float* g = gains.data();
    const auto size = n * rows * static_cast<py::ssize_t>(kFillFeatures);
    for (py::ssize_t k = 0; k < size; ++k)
      if (!std::isfinite(g[k]))
        throw std::invalid_argument("gains: node " + std::to_string(k / (rows * kFillFeatures)) + " row " +
                                    std::to_string(k / kFillFeatures % rows) + " has " + std::to_string(g[k]) +
                                    "; allowed: finite numbers");
    std::copy(g, g + size, policy.mutable_gains(0));
  }

  py::tuple HeartbeatTables() {
    const std::size_t n = policy.num_nodes();
    std::vector<double> migration(n * n), stealing(n * n);
    fill->Tables(migration.data(), stealing.data());
    return Tables(n, migration, stealing);
  }

  py::list Take() {
    py::list out;
    const auto n = static_cast<py::ssize_t>(policy.num_nodes());
    for (std::uint32_t i = 0; i < policy.num_nodes(); ++i) {
      const auto& d = fill->Recorded(i);
      const auto k = static_cast<py::ssize_t>(d.dest.size());
      out.append(py::make_tuple(py::array_t<std::uint32_t>(k, d.dest.data()),
                                py::array_t<double>({k, n}, d.levels.data()),
                                py::array_t<double>(k, d.arrivals.data())));
    }
    fill->Clear();
    return out;
  }
};

PyTaskFill MakeTaskFill(const py::object& sim, const std::vector<double>& capacity, double level_scale,
                        double heartbeat_services, double horizon, double mix, bool steal, double heartbeat_us) {
  auto& s = sim.cast<dcgym::rack::RackSim&>();
  const auto& cfg = s.Config();
  if (cfg.entry.kind != dcgym::rack::EntryKind::kNodes || cfg.dispatch.kind != dcgym::rack::DispatchKind::kTable)
    throw std::invalid_argument("sim: needs entry kind 'nodes' and dispatch policy 'table'");
  const std::size_t n = s.NumNodes();
  if (capacity.size() != n)
    throw std::invalid_argument("capacity: " + std::to_string(capacity.size()) + " values for " + std::to_string(n) +
                                " nodes");
  for (double c : capacity)
    if (!(c > 0 && std::isfinite(c))) throw std::invalid_argument("capacity: every value must be finite and > 0");
  const auto positive = [](double v, const char* name) {
    if (!(v > 0 && std::isfinite(v))) throw std::invalid_argument(std::string(name) + ": must be finite and > 0");
  };
  positive(level_scale, "level_scale");
  positive(heartbeat_services, "heartbeat_services");
  positive(horizon, "horizon");
  positive(heartbeat_us, "heartbeat_us");
  if (!(mix >= 0 && mix <= 1)) throw std::invalid_argument("mix: must be in [0, 1]");
  std::vector<float> cap(capacity.begin(), capacity.end());
  PyTaskFill t;
  t.sim = sim;
  t.policy = dcgym::runtime::FillPolicy(n, static_cast<float>(level_scale), static_cast<float>(heartbeat_services),
                                        static_cast<float>(horizon), static_cast<float>(mix), steal, std::move(cap),
                                        std::vector<float>(n * FillRows(n) * kFillFeatures, 0.0f), true);
  return t;
}

py::dict Run(PyController& c, int64_t heartbeats) {
  const auto count = Count(heartbeats, "heartbeats");
  RunStats s;
  {
    py::gil_scoped_release release;
    s = c.controller->Run(count);
  }
  py::dict out = c.sim.attr("results")();
  AddRunStats(out, s, c.learner->NumUpdates());
  return out;
}

}  // namespace
}  // namespace dcgym::bindings

void BindController(py::module_& m) {
  namespace b = dcgym::bindings;
  using dcgym::runtime::MalcolmLearner;

  py::class_<b::PyLearner>(m, "MalcolmLearner",
                           "Malcolm's per-node linear actor-critic learner in C++ (dcgym/runtime/learner.hpp).")
      .def(py::init([](int64_t num_nodes, const py::object& options, const py::object& critic,
                       const py::object& migration, const py::object& stealing, uint64_t seed) {
             const py::dict o = options.is_none() ? py::dict() : b::Mapping(options, "options");
             b::OnlyKeys(o, "options", b::kLearnerKeys);
             return b::PyLearner{b::MakeLearner(b::Count<size_t>(num_nodes, "num_nodes"), b::ParseLearner(o), critic,
                                                migration, stealing, seed)};
           }),
           py::arg("num_nodes"), py::arg("options") = py::none(), py::arg("critic") = py::none(),
           py::arg("migration") = py::none(), py::arg("stealing") = py::none(), py::arg("seed") = 0,
           "Parameters given as (N, F_c), (N, N, F_a), (N, N, F_a) float arrays; a block not given is drawn "
           "uniform in +-1/sqrt(F) from `seed`. Options: MalcolmConfig's names and defaults.")
      .def(
          "compute_gradients",
          [](b::PyLearner& l, size_t node, const b::FArray& obs, const b::FArray& next_obs, const b::DArray& rewards,
             const b::FArray& migrate, const b::FArray& steal, const py::object& start, const py::object& term) {
            return l.Step(node, obs, next_obs, rewards, migrate, steal, start, term, false);
          },
          py::arg("node"), py::arg("obs"), py::arg("next_obs"), py::arg("rewards"), py::arg("migrate_counts"),
          py::arg("steal_counts"), py::arg("episode_start") = py::none(), py::arg("terminated") = py::none(),
          "Node's loss gradients (critic, migration, stealing) for one mini-batch of raw observations; updates "
          "the traces and R-bar but not the parameters.")
      .def(
          "update",
          [](b::PyLearner& l, size_t node, const b::FArray& obs, const b::FArray& next_obs, const b::DArray& rewards,
             const b::FArray& migrate, const b::FArray& steal, const py::object& start, const py::object& term) {
            return l.Step(node, obs, next_obs, rewards, migrate, steal, start, term, true);
          },
          py::arg("node"), py::arg("obs"), py::arg("next_obs"), py::arg("rewards"), py::arg("migrate_counts"),
          py::arg("steal_counts"), py::arg("episode_start") = py::none(), py::arg("terminated") = py::none(),
          "compute_gradients, then one AdamW step of the node's three blocks; returns the gradients.")
      .def(
          "complete_round", [](b::PyLearner& l) { return l.learner->CompleteRound(); },
          "Count one round of updates; every consensus_period rounds average the critics (returns True then).")
      .def(
          "consensus", [](b::PyLearner& l) { l.learner->Consensus(); }, "Average the critics now.")
      .def(
          "parameters", [](const b::PyLearner& l) { return b::Parameters(*l.learner); },
          "{'critic': (N, F_c), 'migration': (N, N, F_a), 'stealing': (N, N, F_a)} copies.")
      .def(
          "set_trace",
          [](b::PyLearner& l, size_t node, const b::FArray& critic, const b::FArray& migration,
             const b::FArray& stealing, double reward_rate) {
            auto& nd = l.learner->At(node);
            const auto& lr = *l.learner;
            const size_t actor = lr.NumNodes() * lr.ActorFeatures();
            if (static_cast<size_t>(critic.size()) != nd.trace_critic.size())
              throw std::invalid_argument("critic: wrong size");
            if (static_cast<size_t>(migration.size()) != actor) throw std::invalid_argument("migration: wrong size");
            if (static_cast<size_t>(stealing.size()) != actor) throw std::invalid_argument("stealing: wrong size");
            std::copy(critic.data(), critic.data() + critic.size(), nd.trace_critic.begin());
            lr.ImportActor(nd.trace_actor, b::Actor::kMigration, migration.data());
            lr.ImportActor(nd.trace_actor, b::Actor::kStealing, stealing.data());
            nd.reward_rate = reward_rate;
          },
          py::arg("node"), py::arg("critic"), py::arg("migration"), py::arg("stealing"), py::arg("reward_rate"),
          "Set a node's eligibility traces and R-bar (as left by an earlier mini-batch).")
      .def(
          "trace",
          [](const b::PyLearner& l, size_t node) {
            const auto& nd = l.learner->At(node);
            py::dict d;
            d["critic"] = py::array_t<float>(static_cast<py::ssize_t>(nd.trace_critic.size()), nd.trace_critic.data());
            d["migration"] = b::ExportActor(*l.learner, nd.trace_actor, b::Actor::kMigration);
            d["stealing"] = b::ExportActor(*l.learner, nd.trace_actor, b::Actor::kStealing);
            d["reward_rate"] = nd.reward_rate;
            return d;
          },
          py::arg("node"), "A node's traces and R-bar.")
      .def_property_readonly("num_updates", [](const b::PyLearner& l) { return l.learner->NumUpdates(); });

  py::class_<b::PyController>(m, "RackController",
                              "Malcolm's linear policy driving a RackSim in C++, optionally learning online "
                              "(dcgym/rack/controller.hpp).")
      .def(py::init([](const py::dict& config, const py::object& options, const py::object& critic,
                       const py::object& migration, const py::object& stealing, uint64_t seed) {
             auto opts = b::ParseController(options.is_none() ? py::dict() : b::Mapping(options, "options"));
             auto c = std::make_unique<b::PyController>();
             c->sim = py::module_::import("dcgym.cpp_core._engine").attr("RackSim")(config);
             auto& sim = c->sim.cast<dcgym::rack::RackSim&>();
             c->learner = b::MakeLearner(sim.NumNodes(), opts.learner, critic, migration, stealing, seed);
             c->controller = std::make_unique<dcgym::rack::RackController>(sim, opts, *c->learner);
             return c;
           }),
           py::arg("config"), py::arg("options") = py::none(), py::arg("critic") = py::none(),
           py::arg("migration") = py::none(), py::arg("stealing") = py::none(), py::arg("seed") = 0,
           "A RackSim from `config` (a rack engine config dict with entry 'nodes' and dispatch 'table', e.g. "
           "RackGame.engine_config) driven by the given parameters ((N, F_c), (N, N, F_a), (N, N, F_a); a block "
           "not given is drawn uniform in +-1/sqrt(F) from `seed`). Options: RackEnvConfig's heartbeat_us, "
           "warmup_us, obs_clip, max_logit, reward and costs; learn (False); MalcolmConfig's learning settings.")
      .def("run", &b::Run, py::arg("heartbeats"),
           "Run heartbeats (GIL released); returns RackSim.results() of the simulation so far plus this run's "
           "heartbeats, imbalance_mean (eq. 1 on the true loads), reward_mean and the learner's num_updates.")
      .def(
          "parameters", [](const b::PyController& c) { return b::Parameters(*c.learner); },
          "The current parameters: {'critic', 'migration', 'stealing'} arrays.")
      .def_property_readonly(
          "sim", [](const b::PyController& c) { return c.sim; }, "The RackSim driven.")
      .def_property_readonly(
          "observations",
          [](const b::PyController& c) {
            const auto n = static_cast<py::ssize_t>(c.controller->NumNodes());
            return py::array_t<float>({n, n}, c.controller->LastObservation(0));
          },
          "(N, N) float32: each node's load observation (rack_v0's first N entries) acted on last.")
      .def_property_readonly(
          "tables",
          [](const b::PyController& c) {
            return b::Tables(c.controller->NumNodes(), c.controller->MigrationTables(), c.controller->StealTables());
          },
          "(migration, stealing) tables (N, N) set by the last heartbeat.")
      .def_property_readonly("num_updates", [](const b::PyController& c) { return c.learner->NumUpdates(); });

  py::class_<b::PyFillLearner>(m, "FillLearner",
                               "Malcolm's online TD(0) actor-critic on a `fill` policy's gains "
                               "(dcgym/runtime/fill_learner.hpp), for one update at a time.")
      .def(py::init([](const py::bytes& policy, const py::object& options) {
             auto fill = b::ParseFillPolicy(policy);
             py::dict d = options.is_none() ? py::dict() : b::Mapping(options, "options");
             b::OnlyKeys(d, "options",
                         std::vector<const char*>(std::begin(b::kLearnerKeys), std::end(b::kLearnerKeys)));
             auto c = std::make_unique<b::PyFillLearner>();
             c->policy = std::move(fill);
             auto config = b::ParseLearnerUnchecked(d);
             dcgym::runtime::FillLearner::Validate(config);
             c->learner = std::make_unique<dcgym::runtime::FillLearner>(c->policy.num_nodes(), config);
             return c;
           }),
           py::arg("policy"), py::arg("options") = py::none(),
           "A learner for the `fill` policy file's bytes `policy`; `options`: MalcolmConfig's learning settings "
           "(trace_lambda must be 0; the learning rates may be 0). The critics start at 0.")
      .def(
          "set_critic",
          [](b::PyFillLearner& l, size_t node, const b::FArray& critic) {
            auto& nd = l.learner->At(node);
            b::CheckShape(critic, {static_cast<py::ssize_t>(nd.critic.size())}, "critic");
            std::copy(critic.data(), critic.data() + critic.size(), nd.critic.begin());
          },
          py::arg("node"), py::arg("critic"), "Set a node's critic weights (F_c,).")
      .def(
          "update",
          [](b::PyFillLearner& l, size_t node, const b::FArray& x, const b::DArray& levels, const b::DArray& arrivals,
             const b::DArray& rewards, const b::FArray& migrate,
             const py::object& tasks) { return l.Update(node, x, levels, arrivals, rewards, migrate, tasks); },
          py::arg("node"), py::arg("x"), py::arg("levels"), py::arg("arrivals"), py::arg("rewards"),
          py::arg("migrate_counts"), py::arg("tasks") = py::none(),
          "One TD(0) update of `node` from a mini-batch: critic inputs x (D + 1, N: x_t then x_D, times load_scale), "
          "the levels (D, N) and arrivals (D,) it acted on, rewards (D,) and migration decisions (D, N); returns the "
          "loss gradients {'critic', 'gains'} before the AdamW step. `tasks` (a per-task policy's batch): "
          "{'offsets': (D + 1,), 'levels': (K, N), 'arrivals': (K,), 'dest': (K,)}, heartbeat t's decisions "
          "offsets[t] .. offsets[t + 1], each with the levels and arrivals it acted on and its destination.")
      .def(
          "parameters",
          [](const b::PyFillLearner& l) {
            py::dict d;
            d["gains"] = b::FillGains(l.policy);
            d["critic"] = b::FillCritics(*l.learner);
            return d;
          },
          "{'gains': (N, 2N + 3, 4), 'critic': (N, F_c)} copies.");

  m.attr("fill_features") =
      dcgym::runtime::kFillFeatures;  // psi's length: a fill policy's gains are FillRows(N) rows of these

  py::class_<b::PyTaskFill>(m, "TaskFill",
                            "rack_v0's `fill` actions on a RackSim (dcgym/rack/task_fill.hpp): a per-task fill policy "
                            "whose gains the agents set, asked at every task that arrives at a node.")
      .def(py::init([](const py::object& sim, const std::vector<double>& capacity, double level_scale,
                       double heartbeat_services, double horizon, double mix, bool steal, double heartbeat_us) {
             auto t = std::make_unique<b::PyTaskFill>(
                 b::MakeTaskFill(sim, capacity, level_scale, heartbeat_services, horizon, mix, steal, heartbeat_us));
             t->fill = std::make_unique<dcgym::rack::TaskFill>(t->sim.cast<dcgym::rack::RackSim&>(), t->policy,
                                                               heartbeat_us, true);
             return t;
           }),
           py::arg("sim"), py::arg("capacity"), py::arg("level_scale"), py::arg("heartbeat_services"),
           py::arg("horizon"), py::arg("mix"), py::arg("steal"), py::arg("heartbeat_us"),
           "Hooks a fill policy with zero gains (water_fill's per-task rule) into `sim`'s arrivals: `capacity` N "
           "workers x speed, levels = beliefs x `level_scale`, the rule's `horizon`, `mix` and `steal`.")
      .def("set_gains", &b::PyTaskFill::SetGains, py::arg("gains"),
           "Every node's gains (N, 2N + 3, 4), finite; they act from the next task.")
      .def("tables", &b::PyTaskFill::HeartbeatTables,
           "(migration, stealing) (N, N): every node's tables from its levels now (a heartbeat's).")
      .def("take", &b::PyTaskFill::Take,
           "Per node, the decisions since the last take: (dest (K,) uint32, levels (K, N), arrivals per heartbeat "
           "(K,)); forgets them.");

  py::class_<b::PyFillController>(m, "FillController",
                                  "A `fill` policy file driving a RackSim in C++ (dcgym/rack/fill_controller.hpp).")
      .def(py::init([](const py::dict& config, const py::bytes& policy, double heartbeat_us, double warmup_us,
                       const py::object& options) {
             auto fill = b::ParseFillPolicy(policy);
             auto c = std::make_unique<b::PyFillController>();
             c->sim = py::module_::import("dcgym.cpp_core._engine").attr("RackSim")(config);
             auto& sim = c->sim.cast<dcgym::rack::RackSim&>();
             if (options.is_none()) {
               c->controller =
                   std::make_unique<dcgym::rack::FillController>(sim, std::move(fill), heartbeat_us, warmup_us);
             } else {
               py::dict d = b::Mapping(options, "options");
               if (!b::Has(d, "heartbeat_us")) d["heartbeat_us"] = heartbeat_us;
               if (!b::Has(d, "warmup_us")) d["warmup_us"] = warmup_us;
               auto opts = b::ParseController(d, false);
               c->controller = std::make_unique<dcgym::rack::FillController>(sim, std::move(fill), opts);
             }
             return c;
           }),
           py::arg("config"), py::arg("policy"), py::arg("heartbeat_us") = 100.0, py::arg("warmup_us") = 0.0,
           py::arg("options") = py::none(),
           "A RackSim from `config` (entry 'nodes', dispatch 'table') driven every heartbeat by the `fill` policy "
           "file's bytes `policy`. `options`: RackController's (learn, reward, costs, obs_clip and MalcolmConfig's "
           "learning settings); with learn=True the gains learn online by TD(0) actor-critic "
           "(dcgym/runtime/fill_learner.hpp; trace_lambda must be 0, the learning rates may be 0).")
      .def("parameters", &b::FillParameters,
           "{'gains': (N, 2N + 3, 4)} the acting policy's gains, plus {'critic': (N, F_c)} when learning.")
      .def("run", &b::RunFill, py::arg("heartbeats"),
           "Run heartbeats (GIL released); returns RackSim.results() of the simulation so far.")
      .def_property_readonly(
          "sim", [](const b::PyFillController& c) { return c.sim; }, "The RackSim driven.")
      .def_property_readonly(
          "tables",
          [](const b::PyFillController& c) {
            return b::Tables(c.controller->NumNodes(), c.controller->MigrationTables(), c.controller->StealTables());
          },
          "(migration, stealing) tables (N, N) set by the last heartbeat.");
}
