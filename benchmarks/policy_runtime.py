"""Policy runtime benchmark: Malcolm's probability and parameter updates in C++, beside Table 1 and PyTorch.

Times one node's work at 16, 32 and 64 nodes, single thread, with the
default bases (actor ``sort``, critic ``customized``):

  probability update   φ_a(x) (ranks, loads, bias) + both actors' logits
                       (2 x N x (2N + 1)) + both softmaxes
  parameter update     one mini-batch (D = 20 heartbeats) of one node:
                       V(x_t), V(x_{t+1}) and δ (21 critic feature maps), the
                       critic and both actors' gradients, one AdamW step of the
                       three blocks; "full" recomputes φ_a and π of the D rows,
                       "as run" reuses them from acting (what RackController
                       does); "/ D" is the as-run update amortised per heartbeat

The C++ numbers come from ``benchmarks/policy_runtime.cpp``, a timing program
built by ``make policy-runtime`` as the extension is built (-O3) and run here
(CPU time of the thread; best of 25 trials, so preemption and cache pollution
on a shared machine matter less). PyTorch does the same computations on this machine in the same
run (torch.set_num_threads(1), float32, the learner's surrogate loss with
autograd and torch.optim.AdamW). Malcolm's Table 1 (us per call, their
machine): probability update 0.1 / 0.2 / 0.5, parameter update 0.9 / 2 / 8,
PyTorch 34 / 40. Table 1's "parameter update" is compared with "/ D": §6.2
("Caching gradients") computes the gradient incrementally as each heartbeat's
data point arrives and applies AdamW once per mini-batch, so the cost is
amortised over the D heartbeats; the average per heartbeat is the whole
mini-batch's work (gradients of D rows + one AdamW step) divided by D.

Then the in-engine evaluation cost: Malcolm's heterogeneous rack
(malcolm_hetero_paper_exp, 14 nodes, load 0.9, 100 us heartbeats) run by
RackController running the linear policy vs RackSim with fixed tables over
the same simulated tasks (tasks per CPU second, best of 3), and RackController
with a random policy and learning online.

Then AuTO's two networks (SIGCOMM 2018 §5.2; §6.3: the central system
answers within 10 ms): sRLA's actor (700 inputs, 600-600, 3 thresholds
through the ``increasing`` head) and lRLA's policy (136 inputs, 10 x 300,
11 flows x (4 + 4 + 3) choices through the ``multi_categorical`` head), one
decision each, exported policy file in the C++ runtime (``RuntimePolicy.act``,
the Python call included) against the same torch module (``torch.no_grad``,
one thread).

    python benchmarks/policy_runtime.py            # about a minute
    python benchmarks/policy_runtime.py --quick    # smoke run
    python benchmarks/policy_runtime.py --auto-only --quick   # AuTO's networks only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np
import torch

from dcgym.agents.malcolm.basis import features
from dcgym.cpp_core import MalcolmLearner, RackController, RackSim, RuntimePolicy
from dcgym.envs.rack.game import RackGame

TABLE1 = {16: (0.1, 0.9), 32: (0.2, 2.0), 64: (0.5, 8.0)}  # us: probability update, parameter update
TARGETS = {16: (0.05, 0.45), 32: (0.1, 1.0), 64: (0.25, 4.0)}
D = 20
ROOT = Path(__file__).resolve().parent.parent
TIMING = ROOT / "build" / "runtime" / "policy_runtime"


def cpp_timing(n: int, repetitions: int, variant: str) -> dict[str, float]:
    """ns per call of one node's updates at ``n`` nodes, from the C++ timing program (built first if needed)."""
    subprocess.run(["make", "-s", "-C", str(ROOT), "policy-runtime"], check=True)
    out = subprocess.run([str(TIMING), str(n), str(repetitions), variant], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def torch_probability_update_us(n: int, repeats: int) -> float:
    """One node's probability update in PyTorch (float32, one thread), best-of median per call."""
    f = 2 * n + 1
    w_m, w_s = torch.rand(n, f) - 0.5, torch.rand(n, f) - 0.5
    x = torch.rand(1, n) * 3.0
    with torch.no_grad():

        def call():
            phi = features("sort", x)
            z_m, z_s = phi @ w_m.T, phi @ w_s.T
            return torch.softmax(z_m, -1), torch.softmax(z_s, -1)

        return _best_us(call, repeats)


def torch_parameter_update_us(n: int, repeats: int) -> float:
    """One node's mini-batch update (paper variant) in PyTorch: the learner's surrogate loss, autograd, AdamW."""
    f_c, f_a = n * (n + 7) // 2 + 1, 2 * n + 1
    theta = torch.nn.Parameter(torch.rand(f_c) - 0.5)
    w_m, w_s = torch.nn.Parameter(torch.rand(n, f_a) - 0.5), torch.nn.Parameter(torch.rand(n, f_a) - 0.5)
    opts = [
        torch.optim.AdamW([p], lr=lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=1e-4)
        for p, lr in ((theta, 2e-3), (w_m, 1e-3), (w_s, 1e-3))
    ]
    states = torch.rand(D + 1, n) * 0.3
    x, x_next = states[:-1], states[1:]
    reward = -torch.rand(D)
    c_m, c_s = torch.randint(0, 4, (D, n)).float(), torch.randint(0, 2, (D, n)).float()

    def call():
        value = features("customized", x) @ theta
        with torch.no_grad():
            delta = reward * 0.01 + 0.99 * (features("customized", x_next) @ theta) - value
        phi_a = features("sort", x)
        loss = -(delta * value).sum() / D
        for w, c in ((w_m, c_m), (w_s, c_s)):
            z = phi_a @ w.T
            loss = loss - (delta * (c * (z - torch.logsumexp(z, -1, keepdim=True))).sum(-1)).sum() / D
        for opt in opts:
            opt.zero_grad()
        loss.backward()
        for opt in opts:
            opt.step()

    return _best_us(call, repeats)


def _best_us(call, repeats: int) -> float:
    """Best of 5 trials of the mean time per call, in us."""
    call()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeats):
            call()
        best = min(best, (time.perf_counter() - t0) / repeats)
    return best * 1e6


def in_engine_overhead(heartbeats: int, repeats: int) -> dict[str, float]:
    """Tasks per CPU second: RackSim with fixed uniform tables vs RackController running the linear policy.

    With all-zero actor weights the controller computes everything a policy
    does (features, 2 x 14 logits over 29 features, softmaxes, tables) but its
    tables are uniform, so it simulates exactly the same tasks as RackSim with
    uniform tables (tests/runtime/test_controller.py checks the results are
    bit-identical): the difference is the policy's cost alone. A random policy
    and online learning are shown beside (their simulations differ: other
    migrations and steals).
    """
    game = RackGame({"scenario": "malcolm_hetero_paper_exp", "load": 0.9})
    config = dict(game.engine_config, seed=1)
    n = game.num_nodes
    uniform = np.full((n, n), 1.0 / n)
    zeros = np.zeros((n, n, 2 * n + 1), np.float32)
    random = MalcolmLearner(n, seed=3).parameters()

    def bare():
        sim = RackSim(config)
        sim.set_tables(uniform, uniform)
        t0 = time.thread_time()
        sim.run_until(heartbeats * 100.0)
        return sim.results()["tasks_arrived"], time.thread_time() - t0

    def controller(params, learn: bool):
        ctl = RackController(config, {"learn": learn}, **params)
        t0 = time.thread_time()
        out = ctl.run(heartbeats)
        return out["tasks_arrived"], time.thread_time() - t0

    rates = {}
    for name, run in (
        ("RackSim, uniform tables", bare),
        ("controller, zero weights", lambda: controller({"migration": zeros, "stealing": zeros}, False)),
        ("controller, random policy", lambda: controller(random, False)),
        ("controller, learning", lambda: controller(random, True)),
    ):
        best = min((run() for _ in range(repeats)), key=lambda r: r[1])
        rates[name] = best[0] / best[1]
    return rates


def auto_decision_us(repeats: int) -> dict[str, tuple[float, float]]:
    """us per decision of AuTO's sRLA and lRLA networks: (C++ runtime, PyTorch), best of 5 trials each."""
    import gymnasium as gym
    from ray.rllib.core.columns import Columns

    from dcgym.agents.auto import DDPGConfig, DDPGRLModule, PGConfig, PGRLModule
    from dcgym.agents.auto.policy_file import lrla_policy, srla_policy
    from dcgym.agents.policy_format import to_bytes

    torch.manual_seed(0)
    srla = DDPGRLModule(
        observation_space=gym.spaces.Box(0.0, 1.0, (700,), np.float32),
        action_space=gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
        inference_only=True,
        model_config=DDPGConfig()._model_config_auto_includes,
    )
    lrla = PGRLModule(
        observation_space=gym.spaces.Box(0.0, 1.0, (136,), np.float32),
        action_space=gym.spaces.MultiDiscrete([4, 4, 3] * 11),
        model_config=PGConfig()._model_config_auto_includes,
    )
    out = {}
    for name, module, policy, torch_call in (
        ("sRLA 700-600-600-3", srla, srla_policy(srla, (1460.0, 1460.0 * 65536)), "actor"),
        ("lRLA 136-10x300-121", lrla, lrla_policy(lrla), "greedy"),
    ):
        runtime = RuntimePolicy.from_bytes(to_bytes(policy))
        obs = np.random.default_rng(1).random(policy.num_inputs, dtype=np.float32)
        x = torch.as_tensor(obs[None])

        def torch_decision(module=module, x=x, how=torch_call):
            with torch.no_grad():
                if how == "actor":
                    return module.forward_inference({Columns.OBS: x})[Columns.ACTION_DIST_INPUTS]
                return module.greedy(x)

        out[name] = (_best_us(lambda r=runtime, o=obs: r.act(o), repeats), _best_us(torch_decision, repeats))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few repetitions (smoke run)")
    parser.add_argument("--auto-only", action="store_true", help="only AuTO's networks")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.auto_only:
        _print_auto(20 if args.quick else 300)
        return
    reps = 200 if args.quick else 4000
    torch_reps = 20 if args.quick else 300
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"{_cpu_model()}; torch {torch.__version__}, 1 thread"
    )
    print("\nus per call, one node (C++ best of 25 trials; ratio = PyTorch / C++)")
    header = (
        f"{'N':>3} | {'prob C++':>8} {'floor':>6} {'target':>6} {'Table1':>6} {'torch':>7} {'ratio':>6} | "
        f"{'param full':>10} {'as run':>7} {'/ D':>6} {'target':>6} {'Table1':>6} {'torch':>7} {'ratio':>6} |"
        f" {'code as run':>11}"
    )
    print(header)
    print("-" * len(header))
    for n in (16, 32, 64):
        paper, code = cpp_timing(n, reps, "paper"), cpp_timing(n, reps, "code")
        prob = paper["probability_update_ns"] / 1e3
        full, cached = paper["parameter_update_ns"] / 1e3, paper["parameter_update_cached_ns"] / 1e3
        t_prob, t_param = torch_probability_update_us(n, torch_reps * 10), torch_parameter_update_us(n, torch_reps)
        floor = paper["weights_read_ns"] / 1e3
        print(
            f"{n:>3} | {prob:8.3f} {floor:6.3f} {TARGETS[n][0]:6.2f} {TABLE1[n][0]:6.1f} {t_prob:7.1f} {t_prob / prob:6.0f} | "
            f"{full:10.2f} {cached:7.2f} {cached / D:6.2f} {TARGETS[n][1]:6.2f} {TABLE1[n][1]:6.1f} "
            f"{t_param:7.0f} {t_param / full:6.0f} | {code['parameter_update_cached_ns'] / 1e3:11.2f}"
        )
    heartbeats = 500 if args.quick else 5000
    print(
        f"\nin-engine evaluation: malcolm_hetero_paper_exp (14 nodes), load 0.9, {heartbeats} heartbeats of "
        "100 us, tasks per CPU second (best of 3)"
    )
    rates = in_engine_overhead(heartbeats, 1 if args.quick else 3)
    base = rates["RackSim, uniform tables"]
    for name, rate in rates.items():
        print(f"  {name:26s} {rate / 1e6:6.2f} M tasks/s   cost over fixed tables {base / rate - 1:+6.1%}")
    _print_auto(20 if args.quick else 300)


def _print_auto(repeats: int) -> None:
    print("\nAuTO's networks, us per decision (best of 5; ratio = PyTorch / C++; §6.3's budget: 10 ms)")
    for name, (cpp, torch_us) in auto_decision_us(repeats).items():
        print(f"  {name:22s} C++ runtime {cpp:9.1f}   PyTorch {torch_us:9.1f}   ratio {torch_us / cpp:5.1f}")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown CPU"


if __name__ == "__main__":
    main()
