// AuTO's agents deciding from exported policy files inside the engine: a
// whole evaluation run in C++, the runtime's networks called every interval
// with no Python in between (evaluate.py --policy FILE on a flow scenario).
#pragma once

#include <cstdint>
#include <string>

#include "dcgym/flow/auto_agents.hpp"
#include "dcgym/flow/flow_sim.hpp"
#include "dcgym/runtime/mlp.hpp"
#include "dcgym/runtime/policy_file.hpp"

namespace dcgym::flow {

// Loads the policy file at `path` into `*policy` and returns its MLP, for `agent` (srla or lrla); throws
// std::invalid_argument naming the agent when the file does not load or holds no mlp policy.
runtime::MlpPolicy* LoadAutoPolicy(const std::string& path, const char* agent, runtime::Policy* policy);

// Checks that `srla` (may be null) is an `increasing`-head MLP from SrlaObservations() to SrlaActions() thresholds
// and `lrla` (may be null) a `multi_categorical` one from LrlaObservations() to (Levels, Caps, Paths) x LrlaFlows()
// groups; throws std::invalid_argument naming the agent and what it needs.
void CheckAutoPolicies(const AutoAgents& agents, const runtime::MlpPolicy* srla, const runtime::MlpPolicy* lrla);

// Runs `sim` with AuTO's agents acting every `interval_s` from the policies (agent 0's network of each; a null
// policy leaves its agent to the engine's rules: sRLA's thresholds stay, long flows stay in MLFQ). `sim` and
// `agents` are as flow_v0's reset leaves them (built, warmed up, interval started). Each interval: the policies
// read the observations (AutoAgents::Observe), sRLA's thresholds in bytes and lRLA's per-flow argmaxes apply,
// the engine runs the interval. The run goes until `flows` flows have arrived, then until every measured flow has
// completed or `drain_factor` x the arrivals' time has passed (the rule of evaluate.py's flow runs). Returns the
// number of intervals.
uint64_t RunAutoPolicies(FlowSim& sim, AutoAgents& agents, runtime::MlpPolicy* srla, runtime::MlpPolicy* lrla,
                         double interval_s, uint64_t flows, double drain_factor);

}  // namespace dcgym::flow
