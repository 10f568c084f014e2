"""A pure-Python implementation of the colo model's tick: the reference of benchmarks/colo_speed.py.

It follows cpp_core/src/colo/ step by step (layout of private cores, hyperthread
speeds, the bandwidth fixed point by the Illinois method, the M/G/c quantile,
the fluid backlog, cache warm-up, the latency window) for services with
private partitions only: no share groups, no MBA caps, no noise, no launches
or departures after time 0. colo_speed.py checks it agrees with the C++ tick
(relative difference below 1e-9) before timing both.
"""

from __future__ import annotations

import math

RHO_MAX = 0.98
LINE = 64.0
MIB = 1048576.0


# ----------------------------------------------------------------------------- queueing


def shape(mean: float, cv2: float) -> tuple[float, list[tuple[float, float]]]:
    """(shift, [(p, phase mean), ...]) of the two-moment fit."""
    if cv2 <= 0:
        return mean, []
    if cv2 <= 1:
        m = mean * math.sqrt(cv2)
        return mean - m, [(1.0, m)]
    r = math.sqrt((cv2 - 1) / (cv2 + 1))
    p1 = 0.5 * (1 + r)
    return 0.0, [(p1, mean / (2 * p1)), (1 - p1, mean / (2 * (1 - p1)))]


def erlang_c(c: int, a: float) -> float:
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    rho = a / c
    return b / (1 - rho + rho * b)


def _mgf(shift, phases, eta):
    e = math.exp(eta * shift)
    if not phases:
        return e, shift * e
    s = sum(p / (1 - eta * m) for p, m in phases)
    ds = sum(p * m / (1 - eta * m) ** 2 for p, m in phases)
    return e * s, e * (shift * s + ds)


def _cramer_lundberg(lam, mean, cv2, shift, phases):
    rho = lam * mean

    def g(eta):
        m, dm = _mgf(shift, phases, eta)
        return math.log(m) - math.log1p(eta / lam), dm / m - 1 / (lam + eta)

    lo = 0.0
    if phases:
        hi = min(1 / m for _, m in phases)
    else:
        hi = 2 / mean
        while g(hi)[0] < 0:
            hi *= 2
    eta = min(2 * (1 - rho) / (mean * (1 + cv2)), 0.5 * (lo + hi))
    if not lo < eta < hi:
        eta = 0.5 * (lo + hi)
    for _ in range(100):
        v, slope = g(eta)
        if v < 0:
            lo = eta
        else:
            hi = eta
        nxt = eta - v / slope
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi)
        if abs(nxt - eta) <= 1e-13 * eta or hi - lo <= 1e-13 * hi:
            eta = nxt
            break
        eta = nxt
    _, dm = _mgf(shift, phases, eta)
    return min(max((1 - rho) / (lam * dm - 1), 0.0), 1.0), eta


def _conv(theta, r, u):
    d = r - theta
    x = d * u
    ratio = -u * (1 - 0.5 * x) if abs(x) < 1e-8 else math.expm1(-x) / d
    dens = u * (1 - 0.5 * x) if abs(x) < 1e-8 else -math.expm1(-x) / d
    e = math.exp(-theta * u)
    return e * (1 - theta * ratio), theta * r * e * dens


def _tail(k, theta, phases, u):
    xt = xd = ct = cd = 0.0
    for p, m in phases:
        r = 1 / m
        e = math.exp(-r * u)
        xt += p * e
        xd += p * r * e
        if k > 0:
            t, d = _conv(theta, r, u)
            ct += p * t
            cd += p * d
    return (1 - k) * xt + k * ct, -((1 - k) * xd + k * cd)


def stationary_quantile(c: int, lam: float, mean: float, cv2: float, q: float) -> float:
    if c == 0 or lam * mean >= c:
        return math.inf
    shift, phases = shape(mean, cv2)
    if lam <= 0:
        k, theta = 0.0, 0.0
    elif c == 1:
        k, theta = _cramer_lundberg(lam, mean, cv2, shift, phases)
    else:
        k, theta = erlang_c(c, lam * mean), 2 * (c / mean - lam) / (1 + cv2)
    target = 1 - q
    if not phases:
        u = 0.0 if k <= target else math.log(k / target) / theta
        return shift + u
    log_target = math.log(target)
    guess = max(m for _, m in phases) * math.log(1 / target)
    if k > target:
        guess = max(guess, math.log(k / target) / theta)
    lo, hi, u = 0.0, guess, guess
    while _tail(k, theta, phases, hi)[0] > target:
        hi *= 2
    for _ in range(100):
        v, slope = _tail(k, theta, phases, u)
        if v > target:
            lo = u
        else:
            hi = u
        nxt = u - (math.log(v) - log_target) * v / slope
        if not (lo < nxt < hi) or not math.isfinite(nxt):
            nxt = 0.5 * (lo + hi)
        if abs(nxt - u) <= 1e-12 * u or hi - lo <= 1e-12 * hi:
            u = nxt
            break
        u = nxt
    return shift + u


# ----------------------------------------------------------------------------- the model


class PyColo:
    """The tick of ColoSim for private partitions, in plain Python."""

    def __init__(self, config: dict):
        pf = config["platform"]
        self.pf = pf
        self.dt = config["dt_s"]
        self.window_ticks = max(1, round(config["latency_window_s"] / self.dt))
        self.cap = config["latency_cap_s"]
        self.svc = config["services"]
        self.n = len(self.svc)
        self.loss = 1 - pf["smt_gain"] / 2 if pf["logical_cores"] == 2 * pf["physical_cores"] else 0.0
        self.instr, self.cpi = [], []
        for s in self.svc:
            f = s.get("ref_freq_mhz") or pf["freq_max_mhz"]
            cache = s.get("ref_cache_mb") or pf["ways"] * pf["mb_per_way"]
            lat = s.get("ref_mem_latency_ns") or pf["mem_latency_ns"]
            mem_cpi = self.mpki(s, cache) * 1e-3 * lat * f * 1e-3 / s.get("mlp", 2)
            self.cpi.append(1 / s["ipc"] - mem_cpi)
            self.instr.append(s["service_ms"] * 1e-3 * f * 1e6 * s["ipc"])
        self.threads = [s.get("threads") or pf["logical_cores"] for s in self.svc]
        self.cores = [0] * self.n
        self.ways = [0] * self.n
        self.freq = [pf["freq_max_mhz"]] * self.n
        self.backlog = [0.0] * self.n
        self.warm = [0.0] * self.n
        self.busy = [0.0] * self.n
        self.latency = 0.0
        self.window = [[] for _ in range(self.n)]
        self.ticks = 0
        self.p99 = [0.0] * self.n
        self.capacity = [0.0] * self.n

    @staticmethod
    def mpki(s: dict, mb: float) -> float:
        m = s["mrc"]
        c = max(mb, 0.25)
        v = m["floor"] + m["pow"] * c ** (-m["alpha"])
        if m.get("hot", 0) > 0 and c < m.get("hot_mb", 0):
            v += m["hot"] * min(1.0, (m["hot_mb"] - c) / m.get("hot_width_mb", 1.0))
        return v

    def set_allocation(self, i: int, cores: int, ways: int, freq_mhz: float | None = None):
        self.cores[i], self.ways[i] = cores, ways
        if freq_mhz is not None:
            self.freq[i] = freq_mhz

    def _layout(self):
        owner = [-1] * self.pf["logical_cores"]
        start, nxt = [], 0
        for i in range(self.n):
            start.append(nxt)
            for _ in range(self.cores[i]):
                owner[nxt] = i
                nxt += 1
        places = []
        for i in range(self.n):
            own, neighbours = 0, []
            if self.cores[i] and self.loss > 0:
                a0, end = start[i], start[i] + self.cores[i]
                for phys in range(a0 // 2, (end - 1) // 2 + 1):
                    a, b = 2 * phys, 2 * phys + 1
                    ha, hb = a0 <= a < end, a0 <= b < end
                    if ha and hb:
                        own += 1
                    else:
                        neighbours.append(owner[b if ha else a])
            elif self.cores[i]:
                own = self.cores[i]
            places.append((own, neighbours))
        return places

    def _speeds(self, places, servers):
        out = []
        for i in range(self.n):
            own, nbs = places[i]
            on_private = min(servers[i], self.cores[i])
            if self.loss == 0:
                out.append((on_private, 0.0))
                continue
            alone = min(on_private, own)
            rest = on_private - alone
            on_partial = min(rest, len(nbs))
            doubled = rest - on_partial
            a, b = alone + doubled, 2.0 * doubled * self.loss
            pen = 1 + self.svc[i].get("smt_penalty", 0.0)
            for k in range(on_partial):
                busy = self.busy[nbs[k]] if nbs[k] >= 0 else 0.0
                a += 1 - self.loss * pen * busy
            out.append((a, b))
        return out

    def _evaluate(self, i, lat, servers, mpki, bpr, speeds, slow, out):
        s = self.svc[i]
        lam = s["rps"]
        t0 = self.instr[i] * (self.cpi[i] / (self.freq[i] * 1e6) + mpki[i] * 1e-3 * lat / s.get("mlp", 2)) * slow[i]
        n = servers[i]
        if n == 0:
            out[i] = (math.inf, 0.0, 0.0, 0.0)
            return 0.0
        a, b = speeds[i]
        saturated = self.backlog[i] > 0
        rho = 1.0
        if not saturated:
            work = lam * t0
            disc = a * a - 4 * b * work
            if work <= 0:
                rho = 0.0
            elif disc >= 0:
                rho = min(1.0, 2 * work / (a + math.sqrt(disc)))
        t_cpu = t0 * n / max(a - b * rho, 1e-9 * n)
        t = t_cpu + s.get("io_ms", 0.0) * 1e-3
        k = n / t
        thr = k if saturated else min(lam, k)
        out[i] = (t, k, thr, thr * t_cpu / n)
        return thr * bpr[i]

    def _solve(self, places, servers, mpki, bpr, slow):
        out = [None] * self.n
        l0, peak = self.pf["mem_latency_ns"] * 1e-9, self.pf["mem_bw_gbs"] * 1e9

        def traffic(lat):
            return sum(self._evaluate(i, lat, servers, mpki, bpr, speeds, slow, out) for i in range(self.n))

        def h(lat):
            u = traffic(lat) / peak
            return lat - (l0 * (1 + u / (2 * (1 - u))) if u < 1 else math.inf)

        for _ in range(60):
            prev_busy, prev_lat = list(self.busy), self.latency
            speeds = self._speeds(places, servers)
            lo, h_lo = l0, h(l0)
            if h_lo >= 0:
                root = lo
            else:
                hi = max(2 * l0, 1.5 * self.latency if self.latency > l0 else 0.0)
                h_hi = h(hi)
                while not h_hi > 0:
                    lo, h_lo, hi = hi, h_hi, hi * 2
                    h_hi = h(hi)
                side = 0
                for _ in range(200):
                    if not hi - lo > 1e-12 * hi:
                        break
                    x = (lo * h_hi - hi * h_lo) / (h_hi - h_lo) if math.isfinite(h_lo) else 0.5 * (lo + hi)
                    if not lo < x < hi:
                        x = 0.5 * (lo + hi)
                    hx = h(x)
                    if hx > 0:
                        hi, h_hi = x, hx
                        if side == 1 and math.isfinite(h_lo):
                            h_lo *= 0.5
                        side = 1
                    else:
                        lo, h_lo = x, hx
                        if side == -1:
                            h_hi *= 0.5
                        side = -1
                    if hx == 0:
                        hi = x
                        break
                traffic(hi)
                root = hi
            self.latency = root
            self.busy = [o[3] for o in out]
            change = abs(root - prev_lat) / root
            change = max([change] + [abs(a - b) for a, b in zip(self.busy, prev_busy)])
            if change < 1e-10:
                break
        return out

    def step(self, ticks: int = 1):
        for _ in range(ticks):
            self._tick()

    def _tick(self):
        pf, dt = self.pf, self.dt
        places = self._layout()
        now = self.ticks * dt
        servers, mpki, bpr, slow = [], [], [], []
        for i, s in enumerate(self.svc):
            cap_mb = self.ways[i] * pf["mb_per_way"]
            self.warm[i] = min(self.warm[i], cap_mb)
            servers.append(min(self.threads[i], self.cores[i]))
            mpki.append(self.mpki(s, self.warm[i]))
            bpr.append(self.instr[i] * mpki[i] * 1e-3 * s.get("bytes_per_miss", 64))
            sd = 1.0
            if self.cores[i] and self.threads[i] > self.cores[i]:
                sd += s.get("ctx_overhead", 0.03) * (self.threads[i] / self.cores[i] - 1)
            w = s.get("warmup_s", 0.0)
            if w > 0 and now < w - 1e-9 * dt:
                sd *= 1 + s.get("warmup_slowdown", 0.0) * min(max(1 - now / w, 0.0), 1.0)
            slow.append(sd)
        out = self._solve(places, servers, mpki, bpr, slow)
        for i, s in enumerate(self.svc):
            t, k, thr, _ = out[i]
            lam, b0 = s["rps"], self.backlog[i]
            b1 = max(0.0, b0 + (lam - k) * dt)
            if servers[i] == 0 or not k > 0:
                p = self.cap if lam > 0 or b1 > 0 else 0.0
            elif lam <= 0 and b0 <= 0 and b1 <= 0:
                p = 0.0
            else:
                q = s.get("percentile", 0.99)
                stat = stationary_quantile(servers[i], min(lam, RHO_MAX * k), t, s.get("cv2", 1.0), q)
                p = min(self.cap, stat + (min(b0, b1) + q * abs(b1 - b0)) / k)
            self.backlog[i] = b1
            misses = thr * self.instr[i] * mpki[i] * 1e-3
            self.warm[i] = min(self.ways[i] * pf["mb_per_way"], self.warm[i] + misses * LINE * dt / MIB)
            self.window[i] = (self.window[i] + [p])[-self.window_ticks :]
            self.p99[i], self.capacity[i] = p * 1e3, k
        self.ticks += 1
