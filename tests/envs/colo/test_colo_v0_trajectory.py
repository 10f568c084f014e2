"""colo_v0 step for step against a plain reference of its rules (kept here, written from its docstring): the same
observations, masks, rewards, terminations, truncations, infos and agents, bit for bit and type for type, under
random actions (masked and unmasked) on scenarios with arrivals, departures, a gap with no service, fixed starts,
random mixes and resets without a seed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gymnasium.utils import seeding

from dcgym.envs.colo import colo_v0
from dcgym.envs.colo.scenario import load_colo_scenario
from dcgym.envs.colo.server import COUNTERS, ENDED, PENDING, RUNNING, WARMING, ColoServer


class Reference:
    """colo_v0's rules, one service at a time; the configuration (scenario, interval, start) is the env's."""

    def __init__(self, env: colo_v0.ColoEnv) -> None:
        self.env = env
        self.names = list(env.possible_agents)
        self.ticks = round(env.interval_s / env.scenario.tick_s)
        self.rng = None

    def reset(self, seed=None, options=None):
        env = self.env
        if seed is not None:
            self.rng, _ = seeding.np_random(int(seed))
        mix = (options or {}).get("mix")
        if mix is None:
            mix = int(self.rng.integers(len(env.scenario.mixes))) if env.random_mix else env.mix
        if seed is None:
            seed = int(self.rng.integers(2**63))
        self.server = ColoServer(env.scenario.engine_config(mix=mix, seed=seed))
        n = len(self.names)
        self.cores, self.ways = [0] * n, [0] * n
        self.idle = [self.server.total_cores, self.server.total_ways]
        self.agents, self.steps = [], 0
        self.wait()
        self.arrive(self.server.phases)
        self.latency = [float(x) for x in self.counter("Latency")]
        return {a: self.observe(a) for a in self.agents}, {a: self.info(a, (0, 0)) for a in self.agents}

    def step(self, actions):
        wanted = {a: colo_v0.decode(int(actions[a])) for a in self.agents}
        granted = {a: (0, 0) for a in self.agents}
        if any(d != (0, 0) for d in wanted.values()):
            for a, (dc, dw) in wanted.items():  # removals first, keeping one core and one way
                i = self.names.index(a)
                take_c = min(max(-dc, 0), self.cores[i] - min(1, self.cores[i]))
                take_w = min(max(-dw, 0), self.ways[i] - min(1, self.ways[i]))
                self.cores[i] -= take_c
                self.ways[i] -= take_w
                self.idle[0] += take_c
                self.idle[1] += take_w
                granted[a] = (-take_c, -take_w)
            for a, (dc, dw) in wanted.items():  # then additions, in agent order, up to what is idle
                i = self.names.index(a)
                add_c, add_w = min(max(dc, 0), self.idle[0]), min(max(dw, 0), self.idle[1])
                self.cores[i] += add_c
                self.ways[i] += add_w
                self.idle[0] -= add_c
                self.idle[1] -= add_w
                granted[a] = (granted[a][0] + add_c, granted[a][1] + add_w)
            self.server.sim.set_allocations(np.array(self.cores), np.array(self.ways))
        self.server.sim.step(self.ticks)
        self.steps += 1
        phases = self.server.phases
        ended = [a for a in self.agents if phases[self.names.index(a)] == ENDED]
        for a in ended:
            i = self.names.index(a)
            self.idle[0] += self.cores[i]
            self.idle[1] += self.ways[i]
            self.cores[i] = self.ways[i] = 0
        if ended and len(ended) == len(self.agents):
            self.wait()
        new = self.arrive(self.server.phases)
        latency = [float(x) for x in self.counter("Latency")]
        truncated = self.steps >= self.env.max_steps
        obs, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for a in self.agents:
            i = self.names.index(a)
            dc, dw = granted.get(a, (0, 0))
            obs[a] = self.observe(a)
            if a in new:
                rewards[a] = 0.0
            elif self.env.reward == "paper":
                rewards[a] = colo_v0.osml_reward(latency[i], self.latency[i], dc, dw)
            else:
                rewards[a] = colo_v0.qos_reward(latency[i], float(self.server.qos_ms[i]), dc, dw)
            terminations[a] = a in ended
            truncations[a] = truncated and a not in ended
            infos[a] = self.info(a, (dc, dw))
        self.latency = latency
        self.agents = [] if truncated else [a for a in self.agents if a not in ended]
        return obs, rewards, terminations, truncations, infos

    def counter(self, name):
        return self.server.counters[:, COUNTERS.index(name)]

    def wait(self):
        while not self.server.running.any() and (self.server.phases == PENDING).any():
            self.server.sim.step(1)

    def arrive(self, phases):
        """Services running but not agents yet (ended ones still count for the share) get their share."""
        new = [a for i, a in enumerate(self.names) if phases[i] in (WARMING, RUNNING) and a not in self.agents]
        share = len(self.agents) + len(new)
        for a in new:
            i = self.names.index(a)
            for held, r, total in ((self.cores, 0, self.server.total_cores), (self.ways, 1, self.server.total_ways)):
                held[i] = min(self.idle[r], total // share if self.env.start is None else self.env.start[r])
                self.idle[r] -= held[i]
                if held[i] == 0:
                    donor = int(np.argmax(held))
                    if held[donor] > 1:
                        held[donor] -= 1
                        held[i] = 1
        if new:
            self.server.sim.set_allocations(np.array(self.cores), np.array(self.ways))
        self.agents = [a for a in self.names if a in self.agents or a in new]
        return new

    def observe(self, a):
        i = self.names.index(a)
        values = np.array([self.server.counters[i, COUNTERS.index(f)] for f in colo_v0.OBSERVATION_FEATURES])
        mask = np.zeros(colo_v0.ACTIONS, np.int8)
        for k in range(colo_v0.ACTIONS):
            dc, dw = colo_v0.decode(k)
            core_ok = min(0, 1 - self.cores[i]) <= dc <= self.idle[0]
            way_ok = min(0, 1 - self.ways[i]) <= dw <= self.idle[1]
            mask[k] = core_ok and way_ok
        return {"observation": values.astype(np.float32), "action_mask": mask}

    def info(self, a, granted):
        i = self.names.index(a)
        latency = float(self.counter("Latency")[i])
        qos = float(self.server.qos_ms[i])
        return {
            "granted": granted,
            "latency_ms": latency,
            "qos_ms": qos,
            "qos_met": latency <= qos,
            "cores": self.cores[i],
            "ways": self.ways[i],
            "idle_cores": self.idle[0],
            "idle_ways": self.idle[1],
            "sim_time_s": float(self.server.sim.now_s),
        }


def same(x, y, where="") -> None:
    """x and y equal bit for bit and type for type (dicts in the same key order)."""
    assert type(x) is type(y), f"{where}: {type(x).__name__} != {type(y).__name__}"
    if isinstance(x, dict):
        assert list(x) == list(y), f"{where}: keys {list(x)} != {list(y)}"
        for k in x:
            same(x[k], y[k], f"{where}[{k!r}]")
    elif isinstance(x, (tuple, list)):
        assert len(x) == len(y), where
        for k, (u, v) in enumerate(zip(x, y)):
            same(u, v, f"{where}[{k}]")
    elif isinstance(x, np.ndarray):
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), f"{where}: {x} != {y}"
    elif isinstance(x, float):
        assert x == y or (math.isnan(x) and math.isnan(y)), f"{where}: {x!r} != {y!r}"
        assert math.copysign(1, x) == math.copysign(1, y), where
    else:
        assert x == y, f"{where}: {x!r} != {y!r}"


GAP = {  # five services: one leaves before the others launch (no service for 20 s), two launch together
    "mixes": [
        [
            {"service": "moses", "load": 0.4, "end_s": 30},
            {"service": "img-dnn", "load": 0.6, "launch_s": 50, "end_s": 100},
            {"service": "xapian", "load": 0.5, "launch_s": 60},
            {"service": "sphinx", "load": 0.5, "launch_s": 60, "end_s": 140},
            {"service": "memcached", "load": 0.3, "launch_s": 70},
        ]
    ]
}


@pytest.mark.parametrize(
    ("scenario", "kwargs", "masked"),
    [
        ("osml_case_a", {}, True),
        ("colo_churn", {"interval_s": 1.0}, False),
        ("colo_churn", {"interval_s": 5.0, "start": [30, 15], "reward": "paper"}, True),
        (("osml_case_a", GAP), {"interval_s": 2.0}, False),
        (("osml_case_a", GAP), {"interval_s": 1.0, "start": [20, 12]}, True),
        ("osml_mixes", {"mix": "random", "interval_s": 0.5, "max_steps": 60}, False),
        ("parties_scaling", {"mix": 3, "max_steps": 50}, True),
    ],
)
def test_colo_v0_follows_the_reference(scenario, kwargs, masked):
    if isinstance(scenario, tuple):
        scenario = load_colo_scenario(*scenario)
    env = colo_v0.parallel_env(scenario=scenario, **kwargs)
    ref = Reference(env)
    rng = np.random.default_rng(len(kwargs) + masked)
    for episode, seed in enumerate([3, None, 8]):
        got, want = env.reset(seed=seed), ref.reset(seed=seed)
        same(got, want, f"episode {episode} reset")
        obs = got[0]
        steps = 0
        while env.agents:
            if masked:
                actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
            else:  # masked actions are clipped; numpy integers are accepted too
                actions = {a: rng.integers(colo_v0.ACTIONS) for a in env.agents}
            got, want = env.step(actions), ref.step(actions)
            same(got, want, f"episode {episode} step {steps}")
            assert env.agents == ref.agents
            assert env.server.cores.tolist() == ref.server.cores.tolist()
            obs = got[0]
            steps += 1
        assert steps == env.max_steps or ref.server.now_s >= env.scenario.horizon_s
