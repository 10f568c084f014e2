"""The small racks the Malcolm learner tests share."""

THREE_NODES = {
    "scenario": "malcolm_hetero_paper_exp",
    "overrides": {"nodes": [{"count": 1, "workers": 4}, {"count": 2, "workers": 2}]},
    "load": 0.9,
    "max_steps": 50,
}
"""rack_v0's settings for a 3-node rack (4, 2 and 2 workers) of Malcolm's heterogeneous scenario at load 0.9."""


def assert_group_acts_as_each_alone(modules, observations, explore=True) -> dict:
    """``group_act`` of ``modules`` on ``observations`` (one tensor of rows per module) equals, bit for bit, each
    module's own ``forward_exploration`` (``forward_inference``) and RLlib's ``GetActions``; returns the group's
    columns."""
    import torch
    from ray.rllib.connectors.module_to_env import GetActions
    from ray.rllib.core.columns import Columns

    group = type(modules[0]).group_act(modules, observations, explore=explore)
    alone = []
    for module, obs in zip(modules, observations, strict=True):
        forward = module.forward_exploration if explore else module.forward_inference
        out = forward({Columns.OBS: obs})
        GetActions()._get_actions(out, module, explore=explore)
        alone.append(out)
    for key in (Columns.ACTION_DIST_INPUTS, Columns.ACTIONS, Columns.ACTION_LOGP):
        expected = torch.cat([out[key] for out in alone])
        assert group[key].dtype == expected.dtype and torch.equal(group[key], expected), key
    return group
