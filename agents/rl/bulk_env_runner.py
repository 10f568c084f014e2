"""An env runner that samples into plain lists and builds RLlib's episodes once per chunk, not once per step.

RLlib's ``MultiAgentEnvRunner`` runs two connector pipelines and a
``MultiAgentEpisode.add_env_step`` at every step: on a 14-node rack that is
about 0.7 ms of connectors and 0.26 ms of episode bookkeeping per env step,
against 0.06 ms for the environment itself (docs/training.md, "Training
speed"). :class:`BulkEnvRunner` does the same work in bulk:

- the module's input is built directly from the environment's observations
  (what the default env-to-module pipeline builds: per module, the observations
  of its agents, episode by episode, in the order RLlib's connectors visit them,
  stacked and made tensors);
- the forward pass is RLlib's (``forward_exploration`` / ``forward_inference``
  of the multi-module, the same ``t``), and actions are drawn as RLlib's
  ``GetActions`` draws them (the same distribution, the same calls, so the same
  random numbers), then unsquashed or clipped for the environment as
  ``NormalizeAndClipActions`` does; modules that can act as a group
  (:class:`~dcgym.agents.rl.apis.GroupActAPI`, Malcolm's per-node modules) do,
  in one computation with each module's own bits;
- each step's data is appended to lists, and each episode chunk is built at its
  end with one ``MultiAgentEpisode(...)`` call (about 33 us per env step of 14
  agents, against 260 us step by step), with the lookback a cut chunk has.

The episodes, the actions and what the learner gets are RLlib's own, bit for bit
(tested against ``MultiAgentEnvRunner``); callbacks see each finished episode at
its end (``on_episode_end``, with the episode's earlier chunks).

It takes this path when the run is of the kind it reproduces, and otherwise
hands the call to RLlib's runner unchanged: env steps counted by env step;
RLlib's default
connector pipelines (optionally with ``FlattenObservations``); stateless modules;
no callback that acts on episodes before their end. An environment in which
some agent does not act at every step is refused with an error naming it.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from gymnasium.spaces import Box, Discrete, MultiDiscrete
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.core.columns import Columns
from ray.rllib.env.env_runner import ENV_STEP_FAILURE
from ray.rllib.env.multi_agent_episode import MultiAgentEpisode
from ray.rllib.utils.metrics import (
    NUM_AGENT_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED,
    NUM_EPISODES,
    NUM_MODULE_STEPS_SAMPLED,
    WEIGHTS_SEQ_NO,
)
from ray.rllib.utils.numpy import convert_to_numpy, flatten_inputs_to_1d_tensor
from ray.rllib.utils.spaces.space_utils import batch as batch_items
from ray.rllib.utils.spaces.space_utils import clip_action, unsquash_action
from ray.rllib.utils.torch_utils import convert_to_torch_tensor

from dcgym.agents.rl.apis import GroupActAPI
from dcgym.agents.rl.apis.group_act_api import draw_actions
from dcgym.agents.rl.batched_copies import batched_copies
from dcgym.agents.rl.env_runner import CountingEnvRunner

__all__ = ["BulkEnvRunner", "bulk_refusal"]

_ENV_TO_MODULE = {
    "AddObservationsFromEpisodesToBatch",
    "AddTimeDimToBatchAndZeroPad",
    "AddStatesFromEpisodesToBatch",
    "AgentToModuleMapping",
    "BatchIndividualItems",
    "NumpyToTensor",
    "FlattenObservations",
}
"""The env-to-module pieces whose work the bulk path does itself (RLlib's defaults and the flattening of lb_v0)."""

_MODULE_TO_ENV = {
    "GetActions",
    "TensorToNumpy",
    "UnBatchToIndividualItems",
    "ModuleToAgentUnmapping",
    "RemoveSingleTsTimeRankFromBatch",
    "NormalizeAndClipActions",
    "ListifyDataForVectorEnv",
}
"""The module-to-env pieces whose work the bulk path does itself (RLlib's defaults)."""

_EARLY_CALLBACKS = ("on_episode_created", "on_episode_start", "on_episode_step")
"""Callbacks the bulk path does not make: it builds an episode when its chunk ends."""


def _flatten_connector(runner: Any) -> Any:
    """The runner's ``FlattenObservations`` env-to-module connector, or None."""
    return next((c for c in runner._env_to_module.connectors if type(c).__name__ == "FlattenObservations"), None)


def bulk_refusal(runner: Any) -> str | None:
    """Why ``runner`` (a multi-agent env runner) cannot take the bulk path, or None if it can."""
    config = runner.config
    if config.count_steps_by != "env_steps":
        return f"count_steps_by is {config.count_steps_by!r}"
    for name, pipeline, known in (
        ("env-to-module", runner._env_to_module, _ENV_TO_MODULE),
        ("module-to-env", runner._module_to_env, _MODULE_TO_ENV),
    ):
        extra = [type(c).__name__ for c in pipeline.connectors if type(c).__name__ not in known]
        if extra:
            return f"the {name} pipeline has {', '.join(extra)}"
    flatten = _flatten_connector(runner)
    if flatten is not None and (flatten._keys_to_remove or not flatten._multi_agent):
        return "FlattenObservations removes keys or is not multi-agent"
    if runner.module is None:
        return "no module"
    stateful = [mid for mid, m in runner.module.items() if m.is_stateful()]
    if stateful:
        return f"stateful modules {stateful}"
    for name in _EARLY_CALLBACKS:
        if getattr(config, f"callbacks_{name}", None):
            return f"callbacks_{name} is set"
        for callback in runner._callbacks:
            if getattr(type(callback), name) is not getattr(RLlibCallback, name):
                return f"{type(callback).__name__}.{name} is defined"
    return None


_INT64_LIKE: dict[np.dtype, bool] = {}
"""Per dtype, whether RLlib's ``convert_to_numpy`` narrows it to int32 (``np.issubdtype(dtype, int)``: int64 only)."""


def _to_tensor(obs: Any, device: Any) -> Any:
    """What NumpyToTensor makes of one module's batched observations (``convert_to_torch_tensor``), without its
    per-call structure walk for the common case of one array on the CPU; anything else goes through it."""
    if not isinstance(obs, np.ndarray) or obs.dtype.kind not in "fiub" or not obs.flags.writeable:
        return convert_to_torch_tensor(obs, device=device)
    tensor = torch.from_numpy(obs)
    if tensor.is_floating_point() and tensor.dtype != torch.float16:
        tensor = tensor.float()
    return tensor.to(torch.device(device) if device is not None else torch.device("cpu"))


def _to_numpy(columns: dict) -> dict:
    """RLlib's ``convert_to_numpy`` (TensorToNumpy) of one module's flat outputs: tensors to arrays (0-d ones to
    Python numbers), floating arrays to float32 (a copy, as ``astype`` makes), int64 ones to int32; the same values,
    without its per-leaf dtype tests. Nested outputs go through it."""
    out = {}
    for key, value in columns.items():
        if isinstance(value, torch.Tensor):
            value = value.cpu().item() if value.dim() == 0 else value.detach().cpu().numpy()
        elif not isinstance(value, np.ndarray):
            return convert_to_numpy(columns)
        if isinstance(value, np.ndarray):
            kind = value.dtype.kind
            if kind == "f":
                value = value.astype(np.float32)
            elif kind in "iu":
                narrow = _INT64_LIKE.get(value.dtype)
                if narrow is None:
                    narrow = _INT64_LIKE[value.dtype] = bool(np.issubdtype(value.dtype, int))
                if narrow:
                    value = value.astype(np.int32)
        out[key] = value
    return out


@dataclass
class _Chunk:
    """One env copy's episode chunk being sampled: its start, lookback and the steps so far (one dict per step)."""

    id_: str
    env_t_started: int
    obs: list = field(default_factory=list)  # lookback, then the chunk's first observation, then one per step
    infos: list = field(default_factory=list)
    actions: list = field(default_factory=list)  # lookback, then one per step
    rewards: list = field(default_factory=list)
    extra: list = field(default_factory=list)
    lookback: int = 0
    order: list = field(default_factory=list)  # the agents, in the order RLlib's connectors visit them
    modules: dict = field(default_factory=dict)  # each agent's module
    first_order: list | None = None  # at the chunk's first step, if not that order
    agent_episode_ids: dict | None = None
    custom_data: dict = field(default_factory=dict)
    start_time: float | None = None

    @property
    def reset_pending(self) -> bool:
        """No observation yet: the copy's next step is its reset (the vector env resets a finished copy then)."""
        return not self.obs

    @property
    def steps(self) -> int:
        return len(self.actions) - self.lookback


class BulkEnvRunner(CountingEnvRunner):
    """RLlib's multi-agent env runner with the bulk sampling of the module docstring where it applies."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bulk_refusal = bulk_refusal(self)
        self._chunks: list[_Chunk] = []
        self._flatten = _flatten_connector(self)
        self._squash = self._squash_function()
        self._squash_plans: dict[tuple, Any] = {}  # rows of a module's batch -> how its actions go to the env
        self._units: dict[tuple, list[list[str]]] = {}  # the modules of a step -> their acting units (_groups)

    def make_env(self) -> None:
        """RLlib's environments; rack_v0's copies then step in one engine call (:mod:`.batched_copies`)."""
        super().make_env()
        batched = batched_copies(self)
        if batched is not None:
            self.env = batched

    def _squash_function(self):
        """What NormalizeAndClipActions does to an action for the env (None: it does nothing)."""
        config = self.config
        if config.normalize_actions:
            return unsquash_action
        if config.clip_actions:
            return clip_action
        return None

    def _sample(
        self,
        *,
        num_timesteps: int | None = None,
        num_episodes: int | None = None,
        explore: bool,
        random_actions: bool = False,
        force_reset: bool = False,
    ):
        if random_actions or self.bulk_refusal is not None:
            # RLlib's path keeps its own ongoing episodes: after a bulk call, it starts from fresh resets, and the
            # next bulk call after it does too
            force_reset = force_reset or bool(self._chunks)
            self._chunks = []
            return super()._sample(
                num_timesteps=num_timesteps,
                num_episodes=num_episodes,
                explore=explore,
                random_actions=random_actions,
                force_reset=force_reset,
            )
        if num_timesteps is None and num_episodes is None:  # RLlib's own default: one episode per copy
            num_episodes = self.num_envs
        return self._sample_bulk(num_timesteps, num_episodes, explore, force_reset)

    # --- the bulk path -----------------------------------------------------------------------------------------

    def _reset(self) -> None:
        self._ongoing_episodes_for_metrics.clear()
        observations, infos = self._try_env_reset(seed=self._seed if self._needs_initial_reset else None, options=None)
        self._needs_initial_reset = False
        self._chunks = [self._new_chunk() for _ in range(self.num_envs)]
        for chunk, obs, info in zip(self._chunks, observations, infos, strict=True):
            self._start(chunk, obs, info)

    def _start(self, chunk: _Chunk, observations: dict, infos: dict) -> None:
        """``chunk``'s first observation, after a reset; its agents' order is the one RLlib's connectors visit
        them in (``get_agents_that_stepped()`` of the episode: a set, whose order depends on how it was built)."""
        chunk.obs.append(self._observed(observations))
        chunk.infos.append(infos)
        chunk.start_time = time.perf_counter()
        if len(observations) == 1:
            chunk.order = list(observations)  # one agent: no order to reproduce
        else:
            probe = MultiAgentEpisode(
                **self._episode_spaces(), agent_to_module_mapping_fn=self.config.policy_mapping_fn
            )
            probe.add_env_reset(observations=observations, infos=infos)
            chunk.order = list(probe.get_agents_that_stepped())
        mapping = self.config.policy_mapping_fn
        chunk.modules = {aid: mapping(aid, None) for aid in chunk.order}  # once per episode, as RLlib's module_for

    def _episode_spaces(self) -> dict[str, dict]:
        """The observation and action spaces a new MultiAgentEpisode of this runner's environment gets."""
        env = self.env.envs[0].unwrapped
        agents = env.possible_agents
        return {
            "observation_space": {a: env.get_observation_space(a) for a in agents},
            "action_space": {a: env.get_action_space(a) for a in agents},
        }

    @staticmethod
    def _new_chunk() -> _Chunk:
        return _Chunk(id_=uuid.uuid4().hex, env_t_started=0)

    def _sample_bulk(
        self, num_timesteps: int | None, num_episodes: int | None, explore: bool, force_reset: bool
    ) -> list[MultiAgentEpisode]:
        """RLlib's ``_sample`` in bulk: ``num_timesteps`` env steps (returning the finished episodes and the cut
        chunks of the others) or ``num_episodes`` finished episodes (from fresh resets, as RLlib samples them)."""
        if num_episodes is not None or force_reset or self._needs_initial_reset or len(self._chunks) != self.num_envs:
            self._reset()
        if num_episodes is not None:
            self._needs_initial_reset = True  # as RLlib: the next call resets (and seeds) the environments again
        done: list[MultiAgentEpisode] = []
        env_ts = 0
        while (len(done) < num_episodes) if num_episodes is not None else (env_ts < num_timesteps):
            actions, actions_for_env, extra = self._act(explore, env_ts)
            results = self._try_env_step(actions_for_env)
            if results is ENV_STEP_FAILURE:
                env_ts = 0
                self._reset()
                continue
            observations, rewards, terminateds, truncateds, infos = results
            ended = []
            for i, chunk in enumerate(self._chunks):
                if chunk.reset_pending:
                    self._start(chunk, observations[i], infos[i])
                    continue
                self._check(observations[i], actions[i], terminateds[i], truncateds[i])
                chunk.obs.append(self._observed(observations[i]))
                chunk.infos.append(infos[i])
                chunk.actions.append(actions[i])
                chunk.rewards.append(rewards[i])
                chunk.extra.append(extra[i])
                env_ts += 1
                self._count_step(chunk)
                if terminateds[i].get("__all__") or truncateds[i].get("__all__"):
                    self._counts[(NUM_EPISODES,)] += 1
                    ended.append(i)
            for i in ended:  # RLlib's order: every copy's step is stored first, then the finished ones are taken
                episode = self._build(self._chunks[i], terminateds[i], truncateds[i])
                self._make_callback_end(episode, i)
                done.append(episode)
                self._chunks[i] = self._new_chunk()
                if num_episodes is not None and len(done) >= num_episodes:
                    break
        for episode in done:
            episode.to_numpy()
        self._done_episodes_for_metrics.extend(done)
        ongoing = []
        for i, chunk in enumerate(self._chunks if num_timesteps is not None else ()):
            if chunk.reset_pending or chunk.steps == 0:
                continue
            episode = self._build(chunk, {}, {})
            self._chunks[i] = self._continuation(chunk, episode)
            self._ongoing_episodes_for_metrics[episode.id_].append(episode)
            ongoing.append(episode.to_numpy())
        return done + ongoing

    def _check(self, observations: dict, actions: dict, terminateds: dict, truncateds: dict) -> None:
        """RuntimeError unless every agent acted and observes, and no agent's episode ended before the others'."""
        if observations.keys() != actions.keys():
            raise RuntimeError(
                f"{self.config.env}: agents {sorted(actions)} acted and {sorted(observations)} observe; "
                "BulkEnvRunner needs every agent to act at every step (use RLlib's MultiAgentEnvRunner)"
            )
        if not (terminateds.get("__all__") or truncateds.get("__all__")) and (
            any(terminateds.values()) or any(truncateds.values())
        ):
            raise RuntimeError(
                f"{self.config.env}: some agents' episodes ended before the others' (terminateds {terminateds}, "
                f"truncateds {truncateds}); BulkEnvRunner needs them to end together (use RLlib's MultiAgentEnvRunner)"
            )

    def _observed(self, observations: dict) -> dict:
        """One copy's observations as RLlib's env-to-module pipeline leaves them in the episode: flattened by
        ``FlattenObservations`` (which writes them back) when the pipeline has it."""
        conn = self._flatten
        if conn is None:
            return observations
        return {
            aid: obs
            if conn._agent_ids is not None and aid not in conn._agent_ids
            else flatten_inputs_to_1d_tensor(
                inputs=obs, spaces_struct=conn._input_obs_base_struct[aid], batch_axis=False
            )
            for aid, obs in observations.items()
        }

    def _act(self, explore: bool, env_ts: int) -> tuple[list[dict], list[dict], list[dict]]:
        """Each copy's actions (as stored in episodes), actions for the env, and per-agent model outputs."""
        rows: dict[str, list[tuple[int, Any]]] = defaultdict(list)  # module -> (copy, agent), RLlib's row order
        inputs: dict[str, list] = defaultdict(list)
        for i, chunk in enumerate(self._chunks):
            if chunk.reset_pending:
                continue
            obs = chunk.obs[-1]
            # RLlib's first step of a continued chunk acts on the batch it built before the cut (the previous
            # chunk's order of agents), the later ones on the cut episode's
            for aid in chunk.first_order if chunk.steps == 0 and chunk.first_order else chunk.order:
                mid = chunk.modules[aid]
                rows[mid].append((i, aid))
                inputs[mid].append(obs[aid])
        actions: list[dict] = [{} for _ in self._chunks]
        for_env: list[dict] = [{} for _ in self._chunks]
        extra: list[dict] = [{} for _ in self._chunks]
        if not rows:
            return actions, for_env, extra
        batch = {mid: {Columns.OBS: _to_tensor(batch_items(items), self._device)} for mid, items in inputs.items()}
        if explore:
            runners = self.config.num_env_runners or 1
            kwargs = {"t": (self.num_env_steps_sampled_lifetime // runners + env_ts) * runners}
        else:
            kwargs = {}
        seq = self._weights_seq_no
        for mids in self._groups(list(batch)):
            modules = [self.module[mid] for mid in mids]
            for module in modules:
                # What forward_exploration / forward_inference do, without switching the module to eval and back
                # at every step: it stays in eval mode (dropout and batch norm as RLlib's sampling has them).
                if module.training:
                    module.eval()
            if len(mids) > 1:
                columns = type(modules[0]).group_act(modules, [batch[mid][Columns.OBS] for mid in mids], explore)
            else:
                module = modules[0]
                columns = (
                    module._forward_exploration(batch[mids[0]], **kwargs)
                    if explore
                    else module._forward_inference(batch[mids[0]])
                )
                draw_actions(columns, module, explore)
            columns = _to_numpy(columns)
            group_rows = rows[mids[0]] if len(mids) == 1 else [row for mid in mids for row in rows[mid]]
            acts = columns.pop(Columns.ACTIONS)
            env_acts = columns.pop(Columns.ACTIONS_FOR_ENV, None)
            if env_acts is None:
                env_acts = self._for_env(acts, group_rows)
            names = list(columns)
            values = [columns[k] for k in names]
            for r, (i, aid) in enumerate(group_rows):
                actions[i][aid] = acts[r]
                for_env[i][aid] = env_acts[r]
                if names:  # RLlib stamps the weights' number on an agent's model outputs when there are any
                    outputs = {k: v[r] for k, v in zip(names, values, strict=True)}
                    outputs[WEIGHTS_SEQ_NO] = seq
                    extra[i][aid] = outputs
        return actions, for_env, extra

    def _groups(self, mids: list[str]) -> list[list[str]]:
        """The modules ``mids`` in acting units, in order: those of a :class:`GroupActAPI` group together (at the
        place of the group's first), every other module alone."""
        key = tuple((mid, id(self.module[mid])) for mid in mids)  # a module replaced under its id is regrouped
        units = self._units.get(key)
        if units is None:
            by_key: dict[Any, list[str]] = {}
            units = []
            for mid in mids:
                module = self.module[mid]
                group = module.group_key() if isinstance(module, GroupActAPI) else None
                if group is None:
                    units.append([mid])
                elif group in by_key:
                    by_key[group].append(mid)
                else:
                    by_key[group] = [mid]
                    units.append(by_key[group])
            self._units[key] = units
        return units

    def _for_env(self, actions: np.ndarray, rows: list[tuple[int, Any]]) -> Any:
        """``actions`` (one row per agent of ``rows``) as NormalizeAndClipActions sends them to the env: unsquashed
        or clipped to each agent's Box, in one array operation when the agents share their space."""
        if self._squash is None:
            return actions
        key = tuple(rows)
        plan = self._squash_plans.get(key)
        if plan is None:
            spaces = [self.env.envs[i].unwrapped.get_action_space(aid) for i, aid in rows]
            if all(isinstance(s, (Discrete, MultiDiscrete)) for s in spaces):
                plan = ()  # both leave every space but a Box as it is
            elif isinstance(spaces[0], Box) and all(s == spaces[0] for s in spaces):
                plan = spaces[0]  # elementwise: the same numbers as row by row
            else:
                plan = spaces
            self._squash_plans[key] = plan
        if isinstance(plan, tuple):
            return actions
        if isinstance(plan, Box):
            return self._squash(actions, plan)
        return [self._squash(a, s) for a, s in zip(actions, plan, strict=True)]

    def _count_step(self, chunk: _Chunk) -> None:
        """RLlib's sample counters for one env step of ``chunk`` (every agent of it stepped: ``_check``)."""
        counts = self._counts
        counts[(NUM_ENV_STEPS_SAMPLED,)] += 1
        for aid, mid in chunk.modules.items():
            counts[(NUM_AGENT_STEPS_SAMPLED, str(aid))] += 1
            counts[(NUM_MODULE_STEPS_SAMPLED, mid)] += 1

    def _build(self, chunk: _Chunk, terminateds: dict, truncateds: dict) -> MultiAgentEpisode:
        """The chunk as the MultiAgentEpisode RLlib's step-by-step sampling (and ``cut``) would have made."""
        episode = MultiAgentEpisode(
            chunk.id_,
            **self._episode_spaces(),
            observations=chunk.obs,
            infos=chunk.infos,
            actions=chunk.actions,
            rewards=chunk.rewards,
            terminateds=terminateds,
            truncateds=truncateds,
            extra_model_outputs=chunk.extra,
            env_t_started=chunk.env_t_started,
            agent_t_started={a: chunk.env_t_started for a in chunk.obs[-1]} if chunk.env_t_started else None,
            len_lookback_buffer=chunk.lookback,
            agent_episode_ids=chunk.agent_episode_ids,
            agent_to_module_mapping_fn=self.config.policy_mapping_fn,
        )
        if (terminateds or truncateds) and all(
            terminateds.get(a) or truncateds.get(a) or sa.is_done for a, sa in episode.agent_episodes.items()
        ):
            episode.is_terminated = True  # as add_env_step declares an episode whose every agent is done
        for aid, sa in episode.agent_episodes.items():
            sa.is_terminated = sa.is_terminated or episode.is_terminated  # as add_env_step passes the episode's
            sa.is_truncated = sa.is_truncated or episode.is_truncated  # end on to each agent's
            if self._flatten is not None:
                sa.observation_space = self._flatten.observation_space  # what FlattenObservations sets
            episode.module_for(aid)  # the mapping cache RLlib's connectors fill as they visit each agent
        episode.custom_data.update(chunk.custom_data)
        chunk.agent_episode_ids = episode.agent_episode_ids
        episode._start_time = chunk.start_time
        episode._last_step_time = time.perf_counter()
        return episode

    def _continuation(self, chunk: _Chunk, episode: MultiAgentEpisode) -> _Chunk:
        """The next chunk of ``chunk``'s episode (built as ``episode``): its last observation, with
        ``episode_lookback_horizon`` steps of lookback (what ``MultiAgentEpisode.cut`` keeps), and the agents in the
        order of the cut episode RLlib would continue with."""
        lookback = min(self.config.episode_lookback_horizon, len(chunk.actions))
        if len(chunk.order) == 1:
            order = chunk.order  # one agent: no order to reproduce (and no cut to build for it)
        else:
            cut = episode.cut(len_lookback_buffer=self.config.episode_lookback_horizon)
            order = list(cut.get_agents_that_stepped())
        tail = slice(len(chunk.obs) - 1 - lookback, None)
        steps = slice(len(chunk.actions) - lookback, None)
        return _Chunk(
            id_=chunk.id_,
            env_t_started=chunk.env_t_started + chunk.steps,
            obs=chunk.obs[tail],
            infos=chunk.infos[tail],
            actions=chunk.actions[steps],
            rewards=chunk.rewards[steps],
            extra=chunk.extra[steps],
            lookback=lookback,
            order=order,
            modules=chunk.modules,
            first_order=chunk.order,
            agent_episode_ids=chunk.agent_episode_ids,
            custom_data=copy.deepcopy(chunk.custom_data),
            start_time=chunk.start_time,
        )

    def _make_callback_end(self, episode: MultiAgentEpisode, env_index: int) -> None:
        episodes: list[Any] = [None] * self.num_envs
        episodes[env_index] = episode
        self._make_on_episode_callback("on_episode_end", env_index, episodes)
