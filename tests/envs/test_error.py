"""The exception hierarchy: one-line messages, field prefixes, pickling."""

from __future__ import annotations

import pickle

from dcgym.envs.error import DcgymError, InvalidConfigError, UnknownPolicyError, UnknownScenarioError


def test_invalid_config_error_reads_field_value_allowed():
    error = InvalidConfigError("dispatch.d", -1, "an integer in [1, 64]")
    assert str(error) == "dispatch.d: got -1; allowed: an integer in [1, 64]"
    assert isinstance(error, DcgymError) and isinstance(error, ValueError)


def test_under_prefixes_the_field_and_keeps_the_class():
    error = UnknownPolicyError("jqs", ["random", "jsq"]).under("dispatch")
    assert type(error) is UnknownPolicyError
    assert str(error) == 'dispatch.policy: got "jqs"; did you mean "jsq"?; allowed: one of random, jsq'


def test_errors_survive_pickling_for_worker_processes():
    for error in (InvalidConfigError("a.b", 1.5, "a number"), UnknownScenarioError("malcom", ["malcolm"])):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error) and copy.field == error.field
