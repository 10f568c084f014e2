"""OSML's central control logic (FAST'23 §5.1, Figure 7) as a colo scheduler: ``osml`` for evaluate.py.

Every ``interval_s`` (1 s) it reads each service's counters and its last five latency samples (HISTORY_LEN) and
takes at most one step:

1. **Arrival** (Algorithm 1): a service that is running with no allocation first gets what is idle (at least one
   core and one way, from the neighbour holding most; services arriving together split it equally) for one
   interval, so its counters exist; then Model-A predicts its OAA from them (Model-A', ``model_a_shadow``, when
   other services run and one is given: OSML's code uses Model-A for a service alone and Model-A' otherwise; its
   twelve inputs are the nine counters and the running neighbours' mean memory bandwidth, allocated cache and
   cores). If the idle pool covers OAA it gets OAA; if the server is short, Model-B gives each neighbour's B-Point
   (cores and ways it can give up within the allowed ``slowdown``), and the neighbours with the largest B-Points
   give until the shortfall is covered (or they have nothing more to give).
2. **Revert**: a Model-C downsize that left its service violating QoS is undone (Algorithm 3's withdrawal).
3. **Under-provisioned** (Algorithm 2, after step 4 in the same decision, as OSML's loop): among services
   violating QoS - by the paper's rule any violation (the mean of the last five samples and the latest both above
   target); by the code's (``rule: code``) only a mean of at least 3x the target - and not improving (latest /
   mean > 0.95), the worst gets Model-C's best action among the additions that the idle pool and the neighbours'
   B-Points allow (Figure 7: when the idle pool is short, Model-B's B-Points from the neighbours).
4. **Over-provisioned** (Algorithm 3): the service furthest below target (mean / target - 1 < -0.2)
   gets Model-C's best action among the removals (at least one core and one way kept), registered for revert.
5. **Give-up**: a service that has not met QoS ``give_up_s`` (180 s, §6.1) after it arrived is left as it is.

When step 4 runs - ``reclaim``:

* ``always`` (default, §5.1 as written: "if OSML finds an LC service is over-provisioned, Algo._3 will be used to
  reclaim them"): in every decision in which some service is over-provisioned.
* ``code`` (OSML's code, ``osml.py`` and ``program_mgr.py`` of its artifact): only in a decision that also upsizes
  a violating service (its loop calls ``use_model_C_sub`` only when the under-provisioned list is not empty), and
  only while the server has no idle cores or no idle ways (its ``is_over_provision`` is false while both are idle):
  OSML's code reclaims resources only to feed an upsize.

``cooldown_s`` (0, off): after a downsize of a service is reverted, that service is not downsized again for this
many seconds. Neither the paper nor OSML's code has it; it is dcgym's option, PARTIES' idea (a 30-s pause after a
failed downsize), to test whether OSML's repeated downsize-and-revert is what delays its convergence.

**Bandwidth** (§5.1, "Bandwidth Scheduling"): on a platform with MBA, every allocation also partitions the memory
bandwidth in the ratio BW_j / sum_i BW_i of the services' OAA bandwidths (Model-A's OAA_Bandwidth output, kept from each
service's placement); a service not yet placed is not capped. ``bandwidth: none`` turns it off; on a platform
without MBA (the E5-2697 v4 of OSML's §6, whose code sets MBA_SUPPORT = False) it does nothing.

**Sharing** (Algorithm 4, §5.1 and Figure 7, "if the app must be placed"): when an arriving service's OAA is still
not covered after the neighbours gave their B-Points, the shortfall (n cores, m ways) is shared rather than
taken: for each neighbour that could give n cores and m ways and keep one of each, and that shares with nobody
yet ("resource sharing usually happens between only two applications"), Model-B' predicts its QoS slowdown from
its twelve co-location inputs (as Model-A') and the cores and ways it would keep; the neighbour with the lowest
predicted slowdown, if within the allowed ``slowdown`` ("if the slowdown is not allowed, the corresponding actions
will not be conducted"), moves n cores and m ways into a share group with the new service, which privately gets
what was idle. Without a Model-B'
(``model_b_shadow``) Algorithm 4 does nothing.

Not yet: Algorithm 4 on an upsize that finds nothing idle (OSML's code also shares there).

The models: ``models`` is a folder holding ``model_a.pt`` and ``model_b.pt`` (``benchmarks/osml_models.py``), and
Models A' and B' as ``model_a_shadow.pt`` and ``model_b_shadow.pt`` when it holds them (``--colocated``);
``model_c`` is a trained Model-C module folder (a train.py checkpoint's
``learner_group/learner/rl_module/shared``). Without ``model_c`` the steps 3-4 do nothing. Or ``files``: a folder
of the three exported as policy files (``model_a.dcpol``, ``model_b.dcpol``, ``model_c.dcpol``, and Models A' and
B' as ``model_a_shadow.dcpol`` and ``model_b_shadow.dcpol`` when there; a zoo entry), run by the C++ runtime
(:mod:`dcgym.agents.osml.files`) without torch or Ray. A folder's ``model_c.dcpol`` may record the ``rule``,
``reclaim`` and ``shadows`` it was built to run with (a zoo entry's best configuration); a parameter given overrides
it. ``shadows: off`` leaves Models A' and B' unused (Model-A places, nothing is shared) when they are given.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dcgym.agents.heuristics.colo.base import Scheduler
from dcgym.agents.osml.features import A_FEATURES
from dcgym.agents.osml.files import load_files, load_shadows, model_c_file, scheduler_settings
from dcgym.envs.colo.colo_v0 import ACTIONS, MAX_DELTA, OBSERVATION_FEATURES
from dcgym.envs.colo.server import COUNTERS, ColoServer
from dcgym.envs.error import InvalidConfigError

__all__ = ["BANDWIDTHS", "HISTORY_LEN", "OSML", "RECLAIMS", "RULES", "SHADOWS"]

HISTORY_LEN = 5
RULES = ("paper", "code")
RECLAIMS = ("always", "code")
BANDWIDTHS = ("partition", "none")
SHADOWS = ("on", "off")
_A_COLS = [COUNTERS.index(k) for k in A_FEATURES]
_OBS_COLS = [COUNTERS.index(k) for k in OBSERVATION_FEATURES]
_DELTAS = np.array([(k // 7 - MAX_DELTA, k % 7 - MAX_DELTA) for k in range(ACTIONS)])


class OSML(Scheduler):
    """OSML's controller (module docstring)."""

    name = "osml"
    PARAMS = {
        "interval_s": "seconds between decisions (1, OSML's SCHEDULING_INTERVAL)",
        "models": "folder with model_a.pt and model_b.pt, and Models A' and B' (model_a_shadow.pt, model_b_shadow.pt) "
        "if there (benchmarks/osml_models.py writes them)",
        "model_c": "folder of a trained Model-C module (a checkpoint's learner_group/learner/rl_module/shared) or its "
        "policy file (over a files folder's Model-C)",
        "files": "folder of the models as policy files, model_a/b/c.dcpol and A' and B' if there (model_a/b_shadow.dcpol; "
        "an export or zoo entry; not with models)",
        "rule": "paper (default, or what a files folder records): Model-C on any QoS violation; code: only past 3x "
        "the target",
        "slowdown": "QoS slowdown a neighbour may be asked to accept when it gives resources up (0.20)",
        "give_up_s": "a service short of QoS this long after arriving is left as it is (180)",
        "reclaim": "always (default, or what a files folder records): Algorithm 3 on any over-provisioned service; "
        "code: only to feed an upsize, with no idle cores or ways (OSML's code)",
        "cooldown_s": "seconds a service is not downsized after a reverted downsize (0: off; not OSML's, dcgym's)",
        "bandwidth": "partition (default): MBA shares in the ratio of Model-A's OAA bandwidths (platforms with MBA); "
        "none",
        "shadows": "on (default, or what a files folder records): Models A' and B' when given; off: Model-A places, "
        "nothing is shared",
    }

    def __init__(
        self,
        interval_s: float | None = None,
        models: str | None = None,
        model_c: str | None = None,
        rule: str | None = None,
        slowdown: float = 0.20,
        give_up_s: float = 180.0,
        files: str | None = None,
        reclaim: str | None = None,
        cooldown_s: float = 0.0,
        bandwidth: str = "partition",
        shadows: str | None = None,
    ) -> None:
        super().__init__(1.0 if interval_s is None else interval_s)
        recorded = scheduler_settings(files) if files is not None else {}  # what the folder was built to run with
        rule = recorded.get("rule", "paper") if rule is None else rule
        reclaim = recorded.get("reclaim", "always") if reclaim is None else reclaim
        shadows = recorded.get("shadows", "on") if shadows is None else shadows
        if shadows not in SHADOWS:
            raise InvalidConfigError("shadows", shadows, "one of " + ", ".join(SHADOWS))
        if rule not in RULES:
            raise InvalidConfigError("rule", rule, "one of " + ", ".join(RULES))
        if not (isinstance(slowdown, (int, float)) and 0 < slowdown < 1):
            raise InvalidConfigError("slowdown", slowdown, "a fraction in (0, 1)")
        if not (isinstance(give_up_s, (int, float)) and give_up_s > 0):
            raise InvalidConfigError("give_up_s", give_up_s, "a positive time in seconds")
        if reclaim not in RECLAIMS:
            raise InvalidConfigError("reclaim", reclaim, "one of " + ", ".join(RECLAIMS))
        if not (isinstance(cooldown_s, (int, float)) and not isinstance(cooldown_s, bool) and 0 <= cooldown_s < 1e9):
            raise InvalidConfigError("cooldown_s", cooldown_s, "a time in seconds >= 0 (0: off)")
        self.rule, self.slowdown, self.give_up_s = rule, float(slowdown), float(give_up_s)
        if bandwidth not in BANDWIDTHS:
            raise InvalidConfigError("bandwidth", bandwidth, "one of " + ", ".join(BANDWIDTHS))
        self.reclaim, self.cooldown_s, self.bandwidth = reclaim, float(cooldown_s), bandwidth
        if files is not None and models is not None:
            raise InvalidConfigError("files", str(files), "a folder of policy files instead of models")
        self.model_a = self.model_b = None
        self.model_a_shadow = None  # Model-A' (placement among neighbours): models/model_a_shadow.pt when there
        self.model_b_shadow = None  # Model-B' (Algorithm 4): models/model_b_shadow.pt when there
        self.q_values: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
        if models is not None:
            from dcgym.agents.osml.supervised import Model  # torch: only with PyTorch models

            folder = Path(str(models))
            for f in ("model_a.pt", "model_b.pt"):
                if not (folder / f).is_file():
                    raise InvalidConfigError("models", str(models), f"a folder holding {f} (benchmarks/osml_models.py)")
            self.model_a = Model.load(folder / "model_a.pt")
            self.model_b = Model.load(folder / "model_b.pt")
            if (folder / "model_a_shadow.pt").is_file():  # Models A' and B' (osml_models.py --colocated)
                self.model_a_shadow = Model.load(folder / "model_a_shadow.pt")
            if (folder / "model_b_shadow.pt").is_file():
                self.model_b_shadow = Model.load(folder / "model_b_shadow.pt")
        if files is not None:
            self.model_a, self.model_b, self.q_values = load_files(str(files))
            self.model_a_shadow, self.model_b_shadow = load_shadows(str(files))
        if shadows == "off":  # Model-A places and nothing is shared, as without Models A' and B'
            self.model_a_shadow = self.model_b_shadow = None
        if model_c is not None:  # over the files' Model-C, if any: a trained one with the files' Models A and B
            self.q_values = _load_model_c(str(model_c))

    # ------------------------------------------------------------------ state

    def reset(self, server: ColoServer, rng: np.random.Generator) -> None:
        super().reset(server, rng)
        n = server.num_services
        self.history = [deque(maxlen=HISTORY_LEN) for _ in range(n)]
        self.probing = np.zeros(n, dtype=bool)
        self.arrived_s = np.full(n, np.nan)
        self.revert: tuple[int, int, int] | None = None  # (service, cores, ways) before a downsize
        self.no_downsize_until = np.full(n, -np.inf)  # cooldown_s after a reverted downsize
        self.oaa_bandwidth = np.full(n, np.nan)  # Model-A's OAA bandwidth at each service's placement
        self.share_plans: list[tuple[list[int], int, int]] = []  # Algorithm 4: (members, cores, ways) to group
        self.decisions: list[str] = []

    def _met(self, i: int, qos: float) -> bool:
        h = self.history[i]
        return bool(np.mean(h) <= qos or h[-1] <= qos)

    def _needs_c(self, i: int, qos: float) -> bool:
        h = self.history[i]
        if self.rule == "code":
            return bool(np.mean(h) >= 3 * qos)
        return not self._met(i, qos)

    # ------------------------------------------------------------------ the loop

    def act(self, server: ColoServer) -> None:
        latency = server.latency_ms
        for i in np.flatnonzero(server.running):
            self.history[i].append(float(latency[i]))
        self.decide(server)

    def decide(self, server: ColoServer) -> None:
        """One decision on the histories as they stand (:meth:`act` appends the latest latency first)."""
        running = server.running
        cores, ways = server.cores.copy(), server.ways.copy()
        qos = server.qos_ms
        # 1. arrivals: a probe allocation, then Model-A's OAA (Model-B when short)
        grouped = {j for g in server.sim.groups if g is not None for j in g["members"]}
        fresh = [i for i in np.flatnonzero(running) if cores[i] == 0 and i not in grouped]
        if fresh:
            self._probe(server, fresh, cores, ways)
            self.probing[fresh] = True
            self._allocate(server, cores, ways)
            self.decisions.append("probe")
            return
        probing = [i for i in np.flatnonzero(self.probing & running)]
        if probing and self.model_a is not None:
            cores[probing], ways[probing] = 0, 0  # every probe's holdings back to the pool, then one by one
            for i in probing:
                self._place(server, i, cores, ways)
                self.probing[i] = False
                self.arrived_s[i] = server.now_s
            self._allocate(server, cores, ways)
            self.decisions.append("place")
            for members, n, m in self.share_plans:
                free = [g for g, group in enumerate(server.sim.groups) if group is None]
                server.set_group(free[0], members, n, m)
                self.decisions.append("share")
            self.share_plans = []
            return
        self.probing[:] = False
        # 2. revert a downsize that broke QoS
        if self.revert is not None:
            i, c0, w0 = self.revert
            self.revert = None
            if running[i] and not self._met(i, qos[i]):
                extra_c = min(c0 - cores[i], server.idle_cores)
                extra_w = min(w0 - ways[i], server.idle_ways)
                cores[i] += max(extra_c, 0)
                ways[i] += max(extra_w, 0)
                self._allocate(server, cores, ways)
                self.decisions.append("revert")
                self.no_downsize_until[i] = server.now_s + self.cooldown_s
                return
        if self.q_values is None:
            return
        live = [i for i in np.flatnonzero(running) if len(self.history[i])]
        under = [
            i
            for i in live
            if self._needs_c(i, qos[i])
            and self.history[i][-1] / max(np.mean(self.history[i]), 1e-12) > 0.95
            and not (server.now_s - np.nan_to_num(self.arrived_s[i], nan=server.now_s) > self.give_up_s)
        ]
        over = [
            i
            for i in live
            if self._met(i, qos[i])
            and np.mean(self.history[i]) / qos[i] - 1 < -0.2
            and server.now_s >= self.no_downsize_until[i]
        ]
        if self.reclaim == "code" and not (under and (server.idle_cores == 0 or server.idle_ways == 0)):
            over = []
        # 4. over-provisioned first (as OSML's loop: SUB on the most over-provisioned, ADD on the worst), so what
        # it gives up is idle for the upsize
        if over:
            i = min(over, key=lambda j: np.mean(self.history[j]) / qos[j])
            allowed = (
                (_DELTAS[:, 0] <= 0)
                & (_DELTAS[:, 1] <= 0)
                & (cores[i] + _DELTAS[:, 0] >= 1)
                & (ways[i] + _DELTAS[:, 1] >= 1)
            )
            before = (int(i), int(cores[i]), int(ways[i]))
            if self._apply_c(server, i, allowed, cores, ways, "downsize"):
                self.revert = before
        # 3. under-provisioned: the worst violating service that is not improving (and not given up on)
        if under:
            i = max(under, key=lambda j: np.mean(self.history[j]) / qos[j])
            idle_c, idle_w = server.idle_cores, server.idle_ways
            if self.model_b is not None:  # Figure 7: not available -> Model-B's B-Points from the neighbours
                give_c, give_w = self._b_points(server, i, cores)
                # a neighbour keeps at least one core and one way (_deprive): what it can give is capped so
                give_c = np.minimum(give_c, np.maximum(cores - 1, 0))
                give_w = np.minimum(give_w, np.maximum(ways - 1, 0))
                idle_c, idle_w = idle_c + give_c.sum(), idle_w + give_w.sum()
            allowed = (
                (_DELTAS[:, 0] >= 0) & (_DELTAS[:, 1] >= 0) & (_DELTAS[:, 0] <= idle_c) & (_DELTAS[:, 1] <= idle_w)
            )
            k = self._best(server, i, allowed)
            dc, dw = (int(x) for x in _DELTAS[k])
            short_c, short_w = dc - server.idle_cores, dw - server.idle_ways
            if (short_c > 0 or short_w > 0) and self.model_b is not None:
                self._deprive(server, i, cores, ways, short_c, short_w, give_c, give_w)
            if dc or dw:
                cores[i] += dc
                ways[i] += dw
                self._allocate(server, cores, ways)
                self.decisions.append("upsize")

    # ------------------------------------------------------------------ the steps

    def _probe(self, server: ColoServer, fresh: list[int], cores: np.ndarray, ways: np.ndarray) -> None:
        """The services that just arrived share what is idle equally (at least one core and one way each, from the
        neighbour holding most): a service probed on one core while others hold the rest would build a backlog
        that outlasts the probe by tens of seconds."""
        for held, total in zip((cores, ways), self._capacity(server)):
            free = total - int(held.sum())
            for k, i in enumerate(fresh):
                share = free // len(fresh) + (1 if k < free % len(fresh) else 0)
                if share > 0:
                    held[i] = share
                else:
                    donor = int(np.argmax(held))
                    if held[donor] > 1:
                        held[donor] -= 1
                        held[i] = 1

    def _features(self, server: ColoServer, i: int) -> np.ndarray:
        return server.counters[i, _A_COLS].astype(np.float64)

    def _colocated_features(self, server: ColoServer, i: int) -> np.ndarray:
        """Models A' and B''s inputs for service ``i`` (OSML's code, ``get_colocated_features``): its nine
        counters, then its running neighbours' mean memory bandwidth (MB/s), allocated cache (MB) and cores."""
        neighbours = [j for j in np.flatnonzero(server.running) if j != i]
        c = server.counters
        own = self._features(server, i)
        if not neighbours:
            return np.append(own, [0.0, 0.0, 0.0])
        mbl = float(np.mean(c[neighbours, COUNTERS.index("MBL")]))
        cache = float(np.sum(c[neighbours, COUNTERS.index("Allocated_Cache")]))
        cores = float(np.sum(c[neighbours, COUNTERS.index("Allocated_Core")]))
        return np.append(own, [mbl, cache, cores])

    def _allocate(self, server: ColoServer, cores: np.ndarray, ways: np.ndarray) -> None:
        """``server.allocate``, with §5.1's bandwidth partition where the platform has MBA; share groups stay."""
        server.allocate(cores, ways, mba=self._mba_shares(server), keep_groups=True)

    def _mba_shares(self, server: ColoServer) -> np.ndarray | None:
        """MBA caps BW_j / sum_i BW_i over the running services with an OAA bandwidth (others 1: uncapped); None
        without MBA, with ``bandwidth: none``, or before any placement."""
        if not server.mba_available or self.bandwidth == "none":
            return None
        bw = np.where(server.running & (self.oaa_bandwidth > 0), self.oaa_bandwidth, 0.0)
        bw = np.nan_to_num(bw, nan=0.0)
        if bw.sum() <= 0:
            return None
        return np.where(bw > 0, np.clip(bw / bw.sum(), 0.01, 1.0), 1.0)

    def _place(self, server: ColoServer, i: int, cores: np.ndarray, ways: np.ndarray) -> None:
        neighbours = [j for j in np.flatnonzero(server.running) if j != i]
        if self.model_a_shadow is not None and neighbours:  # OSML's code: Model-A' among running neighbours
            oaa = self.model_a_shadow.predict(self._colocated_features(server, i)[None])[0]
        else:
            oaa = self.model_a.predict(self._features(server, i)[None])[0]
        self.oaa_bandwidth[i] = float(oaa[4])  # supervised.A_TARGETS: OAA_Bandwidth
        want_c = int(np.clip(round(oaa[0]), 1, server.total_cores))
        want_w = int(np.clip(round(oaa[1]), 1, server.total_ways))
        cap_c, cap_w = self._capacity(server)  # what private partitions may hold: share groups apart
        short_c = want_c - (cap_c - int(cores.sum()))
        short_w = want_w - (cap_w - int(ways.sum()))
        if (short_c > 0 or short_w > 0) and self.model_b is not None:
            give_c, give_w = self._b_points(server, i, cores)
            self._deprive(server, i, cores, ways, short_c, short_w, give_c, give_w)
        if self._share(server, i, cores, ways, want_c, want_w):
            return
        cores[i] = max(1, min(want_c, cap_c - int(cores.sum())))
        ways[i] = max(1, min(want_w, cap_w - int(ways.sum())))
        if cores.sum() > cap_c or ways.sum() > cap_w:  # nothing idle at all: one unit
            for held, total in ((cores, cap_c), (ways, cap_w)):
                while held.sum() > total:
                    others = [j for j in range(len(held)) if j != i]
                    donor = max(others, key=lambda j: held[j])
                    held[donor] -= 1

    def _capacity(self, server: ColoServer) -> tuple[int, int]:
        """Cores and ways private partitions may hold: the server's, less the share groups' (and those planned)."""
        groups = [g for g in server.sim.groups if g is not None]
        pooled_c = sum(g["cores"] for g in groups) + sum(n for _, n, _ in self.share_plans)
        pooled_w = sum(g["ways"] for g in groups) + sum(m for _, _, m in self.share_plans)
        return server.total_cores - pooled_c, server.total_ways - pooled_w

    def _share(self, server: ColoServer, i: int, cores: np.ndarray, ways: np.ndarray, want_c: int, want_w: int) -> bool:
        """Algorithm 4 (module docstring): share what the arriving service ``i`` still lacks of its OAA with the one
        neighbour Model-B' predicts to slow down least, if within ``slowdown``; plans the group (set once the
        private partitions are) and gives ``i`` what is idle. False (nothing changed) when no sharing is done."""
        groups = server.sim.groups
        if self.model_b_shadow is None or sum(g is None for g in groups) <= len(self.share_plans):
            return False  # no Model-B', or no share group left on the engine
        cap_c, cap_w = self._capacity(server)
        free_c, free_w = cap_c - int(cores.sum()), cap_w - int(ways.sum())
        n, m = max(want_c - free_c, 0), max(want_w - free_w, 0)
        if n == 0 and m == 0:
            return False
        busy = {j for g in server.sim.groups if g is not None for j in g["members"]}
        busy |= {j for members, _, _ in self.share_plans for j in members}
        cands = [
            j
            for j in np.flatnonzero(server.running)
            if j != i and j not in busy and cores[j] - n >= 1 and ways[j] - m >= 1
        ]
        if not cands:
            return False
        x = np.stack([np.append(self._colocated_features(server, j), [cores[j] - n, ways[j] - m]) for j in cands])
        slowdowns = np.asarray(self.model_b_shadow.predict(x), dtype=np.float64).reshape(len(cands), -1)[:, 0]
        k = int(np.argmin(slowdowns))
        if slowdowns[k] > self.slowdown:
            return False
        j = int(cands[k])
        cores[j] -= n
        ways[j] -= m
        cores[i], ways[i] = max(free_c, 0), max(free_w, 0)
        self.share_plans.append(([j, int(i)], n, m))
        return True

    def _best(self, server: ColoServer, i: int, allowed: np.ndarray) -> int:
        """Model-C's best action for service ``i`` among ``allowed``."""
        obs = server.counters[i, _OBS_COLS].astype(np.float32)
        q = np.where(allowed, self.q_values(obs[None], allowed[None].astype(np.int8))[0], -np.inf)
        return int(np.argmax(q))

    def _apply_c(self, server: ColoServer, i: int, allowed: np.ndarray, cores, ways, what: str) -> bool:
        dc, dw = _DELTAS[self._best(server, i, allowed)]
        if dc == 0 and dw == 0:
            return False
        cores[i] += dc
        ways[i] += dw
        self._allocate(server, cores, ways)
        self.decisions.append(what)
        return True

    def _b_points(self, server: ColoServer, i: int, cores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per service, the (cores, ways) Model-B says it can give up at ``slowdown``; 0 for ``i`` and idle ones."""
        n = len(cores)
        give_c, give_w = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        neighbours = [j for j in np.flatnonzero(server.running) if j != i and cores[j] > 0]
        if neighbours:
            x = np.stack([np.append(self._features(server, j), self.slowdown) for j in neighbours])
            b = np.maximum(np.round(self.model_b.predict(x)), 0).astype(np.int64)  # supervised.B_TARGETS
            give_c[neighbours], give_w[neighbours] = b[:, 2], b[:, 3]  # <cores, ways> together
        return give_c, give_w

    def _deprive(self, server, i, cores, ways, short_c, short_w, give_c, give_w) -> None:
        """Take ``short_c`` cores and ``short_w`` ways from the neighbours, the largest B-Points first."""
        for j in np.argsort(-(give_c + give_w), kind="stable"):
            if j == i:
                continue
            tc = int(min(max(short_c, 0), give_c[j], cores[j] - 1))
            tw = int(min(max(short_w, 0), give_w[j], ways[j] - 1))
            cores[j] -= tc
            ways[j] -= tw
            short_c -= tc
            short_w -= tw


def _load_model_c(path: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Q-values of a trained Model-C module folder or its policy file, as a function of (observations, masks)."""
    if Path(path).is_file():
        return model_c_file(path)
    if not Path(path).is_dir():
        raise InvalidConfigError("model_c", path, "a trained Model-C module folder or its policy file")
    import torch  # torch and Ray: only with a Model-C module folder
    from ray.rllib.core.rl_module.rl_module import RLModule

    module = RLModule.from_checkpoint(path)

    def q_values(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            out = module.compute_q_values(
                {"obs": {"observation": torch.as_tensor(obs), "action_mask": torch.as_tensor(mask)}}
            )
        return out["qf_preds"].numpy()

    return q_values
