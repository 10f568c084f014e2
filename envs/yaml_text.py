"""The one YAML reader of dcgym's files and ``--set`` values: strict where PyYAML is lenient.

PyYAML's safe loader reads ``1e12`` as the string ``"1e12"`` (YAML 1.1 wants a
dot: ``1.0e12``), keeps the last of two equal keys without a word, and overflows
Python's stack on deeply nested input. :func:`parse` reads ``1e12`` as a float
(as YAML 1.2 and JSON do), refuses a repeated key naming it and its line, and
turns too deep a nesting into a YAML error, so a file is read as written or
refused with one line.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["MAX_DEPTH", "parse"]

MAX_DEPTH = 200
"""Nesting of collections a document may have (dcgym's files nest a few levels deep)."""

_FLOAT_WITHOUT_DOT = re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$")


class _Loader(yaml.SafeLoader):
    """The safe loader with an exponent float, unique keys and a depth limit."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"collections nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, str | int | float | bool) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} given twice in one mapping", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep)


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_WITHOUT_DOT, list("-+0123456789"))


def parse(text: str) -> Any:
    """The document in ``text``; raises ``yaml.YAMLError`` (with ``problem`` and ``problem_mark``) if it is not
    YAML dcgym reads."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
