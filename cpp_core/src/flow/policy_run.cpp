// AuTO's agents deciding from exported policy files inside the engine (policy_run.hpp).
#include "dcgym/flow/policy_run.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "dcgym/kernel/check.hpp"

namespace dcgym::flow {

using kernel::Fail;
using kernel::Str;

runtime::MlpPolicy* LoadAutoPolicy(const std::string& path, const char* agent, runtime::Policy* policy) {
  std::string error;
  const std::string field = std::string(agent) + " policy";
  if (!runtime::LoadPolicyFile(path, policy, &error)) Fail(field, error);
  if (policy->mlp() == nullptr)
    Fail(field, "needs an mlp policy file, got " + std::string(runtime::PolicyKindName(policy->kind())));
  return policy->mlp();
}

void CheckAutoPolicies(const AutoAgents& agents, const runtime::MlpPolicy* srla, const runtime::MlpPolicy* lrla) {
  if (srla != nullptr) {
    if (srla->head() != runtime::Head::kIncreasing)
      Fail("srla policy",
           "needs the increasing head (thresholds in bytes), got " + std::string(runtime::HeadName(srla->head())));
    if (srla->num_inputs() != agents.SrlaObservations() || srla->num_outputs() != agents.SrlaActions())
      Fail("srla policy", "must map " + Str(agents.SrlaObservations()) + " observations to " +
                              Str(agents.SrlaActions()) + " thresholds on this scenario, got " +
                              Str(srla->num_inputs()) + " -> " + Str(srla->num_outputs()));
  }
  if (lrla != nullptr) {
    if (lrla->head() != runtime::Head::kMultiCategorical)
      Fail("lrla policy", "needs the multi_categorical head (a level, cap and path per long flow), got " +
                              std::string(runtime::HeadName(lrla->head())));
    std::vector<uint32_t> want;
    for (uint32_t i = 0; i < agents.LrlaFlows(); ++i)
      want.insert(want.end(), {agents.LevelChoices(), agents.Caps(), agents.Paths()});
    if (lrla->num_inputs() != agents.LrlaObservations() || lrla->groups() != want)
      Fail("lrla policy", "must map " + Str(agents.LrlaObservations()) + " observations to " + Str(agents.LrlaFlows()) +
                              " x (" + Str(agents.LevelChoices()) + ", " + Str(agents.Caps()) + ", " +
                              Str(agents.Paths()) + ") choices on this scenario, got " + Str(lrla->num_inputs()) +
                              " observations and " + Str(lrla->groups().size()) + " groups");
  }
}

uint64_t RunAutoPolicies(FlowSim& sim, AutoAgents& agents, runtime::MlpPolicy* srla, runtime::MlpPolicy* lrla,
                         double interval_s, uint64_t flows, double drain_factor) {
  CheckAutoPolicies(agents, srla, lrla);
  if (!(interval_s > 0) || !std::isfinite(interval_s))
    Fail("interval_s", "must be a positive finite number of seconds, got " + Str(interval_s));
  if (!(drain_factor >= 0) || !std::isfinite(drain_factor))
    Fail("drain_factor", "must be a finite number >= 0, got " + Str(drain_factor));
  std::vector<float> srla_obs(agents.SrlaObservations()), lrla_obs(agents.LrlaObservations());
  std::vector<float> srla_out(agents.SrlaActions());
  std::vector<double> thresholds(agents.SrlaActions());
  std::vector<float> lrla_out(lrla != nullptr ? lrla->num_outputs() : 0);
  std::vector<int64_t> choices(size_t{agents.LrlaFlows()} * kLrlaChoices);
  double rewards[2];
  agents.Observe(sim, srla_obs.data(), lrla_obs.data());

  uint64_t intervals = 0;
  const auto step = [&] {
    if (srla != nullptr) {
      srla->Act(srla_obs.data(), srla_out.data());
      for (size_t i = 0; i < thresholds.size(); ++i) thresholds[i] = srla_out[i];
      sim.SetThresholds(thresholds);
    }
    if (lrla != nullptr) {
      lrla->Act(lrla_obs.data(), lrla_out.data());
      lrla->GroupArgmax(lrla_out.data(), choices.data());
    }
    agents.Step(sim, nullptr, lrla != nullptr ? choices.data() : nullptr, interval_s, srla_obs.data(), lrla_obs.data(),
                rewards);
    ++intervals;
  };
  while (sim.Count().arrived < flows) step();
  const double deadline = sim.Now() * (1 + drain_factor);
  while (sim.MeasuredPending() > 0 && sim.Now() < deadline) step();
  return intervals;
}

}  // namespace dcgym::flow
