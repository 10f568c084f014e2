"""Validation with pydantic, reported as one-line :class:`InvalidConfigError`.

pydantic reports an error as a location (``("nodes", 0, "workers")``), a type
and the input. Users want the field path they would write in YAML or in an
override (``nodes.0.workers``), the bad value, and what the schema allows. The
last part is read from the schema itself (the field's type and its
``ge``/``le`` bounds), so the message and the check cannot disagree.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Iterable
from typing import Annotated, Any, Literal, Union

import annotated_types as at
from pydantic import AfterValidator, BaseModel, PlainValidator, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from dcgym.envs.error import MISSING, InvalidConfigError, did_you_mean


def validate(target: Any, data: Any, field: str = "") -> Any:
    """Validate ``data`` against a model class or an annotated type.

    Raises InvalidConfigError for the first problem found, its field path
    prefixed with ``field``.
    """
    try:
        if isinstance(target, type) and issubclass(target, BaseModel):
            return target.model_validate(data)
        return _adapter(target).validate_python(data)
    except ValidationError as exc:
        raise config_error(exc, target).under(field) from None


@functools.lru_cache(maxsize=64)  # targets are module-level types; building an adapter is slow
def _adapter(target: Any) -> TypeAdapter:
    return TypeAdapter(target)


def config_error(exc: ValidationError, root: Any) -> InvalidConfigError:
    """The first error of ``exc`` (raised validating ``root``) as an InvalidConfigError."""
    err = exc.errors(include_url=False)[0]
    kind, loc, ctx = err["type"], err["loc"], err.get("ctx", {})
    path, node = _locate(root, loc)
    field = ".".join(path)
    cause = ctx.get("error")
    if isinstance(cause, InvalidConfigError):
        return cause.under(field)
    if kind == "extra_forbidden":
        known = list(node.parent_fields)
        allowed = "one of the fields " + ", ".join(known) if known else "nothing (no fields are allowed here)"
        return InvalidConfigError(field, err["input"], allowed, suggestion=did_you_mean(loc[-1], known))
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        node = _through_none(node)
        tags = [tag for member in _members(node.annotation) for tag in _tags(member, node.discriminator)]
        tag = ctx.get("tag", MISSING)
        return InvalidConfigError(
            f"{field}.{node.discriminator}" if field else node.discriminator,
            tag,
            "one of " + ", ".join(tags),
            suggestion=did_you_mean(tag, tags) if tag is not MISSING else None,
        )
    value = MISSING if kind == "missing" else err.get("input")
    allowed = describe(node.annotation, node.metadata, node.discriminator) if node.known else err["msg"]
    return InvalidConfigError(field, value, allowed)


class _Node(typing.NamedTuple):
    """What the schema says about one location: its type, constraints and, for a mapping, its fields."""

    annotation: Any = None
    metadata: tuple = ()
    discriminator: str | None = None
    parent_fields: tuple[str, ...] = ()
    known: bool = True


def _locate(root: Any, loc: tuple) -> tuple[list[str], _Node]:
    """Follow a pydantic location through the schema; union tags in ``loc`` are not shown in the path."""
    path: list[str] = []
    node = _unwrap(root)
    for key in loc:
        node = _through_none(node)
        base = _without_none(node.annotation)
        if node.discriminator and isinstance(key, str):
            member = next((m for m in _members(base) if key in _tags(m, node.discriminator)), None)
            if member is not None:
                node = _unwrap(member)
                continue
        path.append(str(key))
        if _is_model(base):
            info = base.model_fields.get(key)
            if info is None:
                return path, _Node(parent_fields=tuple(base.model_fields), known=False)
            node = _from_field(info)
        elif typing.get_origin(base) is list and isinstance(key, int):
            node = _unwrap(typing.get_args(base)[0])
        elif typing.get_origin(base) is tuple and isinstance(key, int) and key < len(typing.get_args(base)):
            node = _unwrap(typing.get_args(base)[key])
        else:
            return path, _Node(known=False)
    return path, node


def _without_none(annotation: Any) -> Any:
    """``X`` for ``X | None`` (a value given for an optional field is an X); anything else unchanged."""
    if _is_union(annotation):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return _unwrap(members[0]).annotation
    return annotation


def _through_none(node: _Node) -> _Node:
    """For ``X | None`` with X a tagged union (an optional ``service``), the node of X with its tag; else ``node``."""
    if node.discriminator or not _is_union(node.annotation):
        return node
    members = [a for a in typing.get_args(node.annotation) if a is not type(None)]
    if len(members) != 1:
        return node
    inner = _unwrap(members[0])
    if not inner.discriminator:
        return node
    return inner._replace(metadata=node.metadata + inner.metadata, parent_fields=node.parent_fields)


def _from_field(info: FieldInfo) -> _Node:
    inner = _unwrap(info.annotation)
    disc = info.discriminator if isinstance(info.discriminator, str) else inner.discriminator
    return inner._replace(metadata=tuple(info.metadata) + inner.metadata, discriminator=disc)


def _unwrap(annotation: Any) -> _Node:
    """Strip ``Annotated[...]``, keeping the constraints and discriminator it carries."""
    metadata: list = []
    discriminator = None
    while typing.get_origin(annotation) is Annotated:
        annotation, *extras = typing.get_args(annotation)
        for extra in extras:
            if isinstance(extra, FieldInfo):
                metadata.extend(extra.metadata)
                if isinstance(extra.discriminator, str):
                    discriminator = extra.discriminator
            else:
                metadata.append(extra)
    return _Node(annotation, tuple(metadata), discriminator)


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (Union, types.UnionType)


def _members(annotation: Any) -> tuple:
    return typing.get_args(annotation) if _is_union(annotation) else (annotation,)


def _tags(model: Any, discriminator: str | None) -> tuple[str, ...]:
    if not _is_model(model) or discriminator not in model.model_fields:
        return ()
    return typing.get_args(model.model_fields[discriminator].annotation)


def describe(annotation: Any, metadata: tuple = (), discriminator: str | None = None) -> str:
    """What values a type allows, in words: ``an integer in [1, 64]``, ``one of fcfs, ps``."""
    node = _unwrap(annotation)
    annotation, metadata = node.annotation, metadata + node.metadata
    discriminator = discriminator or node.discriminator
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if discriminator:
        tags = [tag for member in _members(annotation) for tag in _tags(member, discriminator)]
        return f"a mapping whose {discriminator} is one of " + ", ".join(tags)
    if _is_union(annotation):
        parts = [describe(a, metadata) for a in args if a is not type(None)]
        return " or ".join(parts + (["null"] if type(None) in args else []))
    if origin is Literal:
        return "one of " + ", ".join(str(a) for a in args)
    if origin is list:
        shortest = next((m.min_length for m in metadata if isinstance(m, at.MinLen)), 0)
        return ("a non-empty list" if shortest == 1 else "a list") + ", each item " + describe(args[0])
    if origin is tuple:
        return "a pair [" + ", ".join(describe(a) for a in args) + "]"
    if origin is dict:
        return "a mapping"
    if annotation is bool:
        return "true or false"
    if annotation is int:
        return "an integer" + _bounds(metadata)
    if annotation is float:
        finite = any(getattr(m, "allow_inf_nan", True) is False for m in metadata)
        return ("a finite number" if finite else "a number") + _bounds(metadata)
    if annotation is str:
        return "a string"
    if _is_model(annotation):
        return "a mapping with the fields " + ", ".join(annotation.model_fields)
    return getattr(annotation, "__name__", str(annotation))


def _bounds(metadata: tuple) -> str:
    """`` in [1, 64]``, `` > 0`` and so on, from annotated-types constraints."""
    low = high = None
    for m in metadata:
        if isinstance(m, (at.Ge, at.Gt)):
            low = ("[", m.ge) if isinstance(m, at.Ge) else ("(", m.gt)
        elif isinstance(m, (at.Le, at.Lt)):
            high = ("]", m.le) if isinstance(m, at.Le) else (")", m.lt)
    if low and high:
        return f" in {low[0]}{_number(low[1])}, {_number(high[1])}{high[0]}"
    if low:
        return f" {'>=' if low[0] == '[' else '>'} {_number(low[1])}"
    if high:
        return f" {'<=' if high[0] == ']' else '<'} {_number(high[1])}"
    return ""


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def choice(field: str, value: Any, allowed: Iterable[str]) -> str:
    """``value`` if it is one of ``allowed``; InvalidConfigError naming ``field`` (with a did-you-mean) otherwise."""
    allowed = list(allowed)
    if not isinstance(value, str) or value not in allowed:
        suggestion = did_you_mean(value, allowed) if isinstance(value, str) else None
        raise InvalidConfigError(field, value, "one of " + ", ".join(allowed), suggestion=suggestion)
    return value


def one_of(allowed: Iterable[str], optional: bool = False) -> Any:
    """A string field taking one of ``allowed`` (or None if ``optional``), refused with a did-you-mean (a Literal
    type gives none)."""
    names = tuple(allowed)

    def check(value: Any) -> str | None:
        return None if optional and value is None else choice("", value, names)

    return Annotated[str | None if optional else str, PlainValidator(check, json_schema_input_type=str)]


def _one_line(value: str) -> str:
    if not value.strip() or "\n" in value.strip():
        raise InvalidConfigError("", value, "one non-empty line of text")
    return value.strip()


OneLine = Annotated[str, AfterValidator(_one_line)]
"""A string that must be one non-empty line (stripped): a scenario's description."""
