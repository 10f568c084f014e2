"""The small racks the Malcolm learner tests share."""

THREE_NODES = {
    "scenario": "malcolm_hetero_paper_exp",
    "overrides": {"nodes": [{"count": 1, "workers": 4}, {"count": 2, "workers": 2}]},
    "load": 0.9,
    "max_steps": 50,
}
"""rack_v0's settings for a 3-node rack (4, 2 and 2 workers) of Malcolm's heterogeneous scenario at load 0.9."""
