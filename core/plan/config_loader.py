"""A RunConfig from its sources: defaults, an optional YAML file, flags and ``--set``.

Precedence, lowest to highest: defaults < ``--config FILE`` < named flags < ``--set a.b=value``.
Unknown keys are errors that name the key path and list the valid keys at that level.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from selfplay.api.errors import ConfigError
from selfplay.core.config import RunConfig


def parse_value(text: str) -> Any:
    """A ``--set`` value: a YAML scalar or flow collection (``3``, ``true``, ``[a, b]``).

    A mapping is written in braces (``{a: 1}``); text that YAML would read as a block mapping,
    such as ``Score:`` or ``note: here``, stays the text it is.
    """
    try:
        value = yaml.safe_load(text) if text.strip() else ""
    except yaml.YAMLError:
        return text
    if isinstance(value, dict) and not text.lstrip().startswith("{"):
        return text
    return value


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Apply one ``a.b=value`` to nested dicts, creating levels as needed."""
    key, sep, raw = assignment.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set expects KEY=VALUE, e.g. --set matches=32; got {assignment!r}.")
    parts = key.strip().split(".")
    node = data
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"--set {key}: {part!r} is a value, not a section.")
        node = child
    node[parts[-1]] = parse_value(raw)


def load_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"Config file {path} does not exist.") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"Config file {path} is not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"Config file {path} must hold a mapping of keys, not a {type(data).__name__}."
        )
    return data


def build_config(
    file: Path | None = None, flags: dict[str, Any] | None = None, overrides: list[str] = ()
) -> RunConfig:
    data: dict[str, Any] = load_yaml(file) if file else {}
    _merge(data, {key: value for key, value in (flags or {}).items() if value is not None})
    for assignment in overrides:
        apply_override(data, assignment)
    try:
        return RunConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(explain(err)) from None


def _merge(data: dict[str, Any], flags: dict[str, Any]) -> None:
    """Flags over the file's keys; a section (or a learner) keeps the keys a flag leaves."""
    for key, value in flags.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            _merge(data[key], value)
        else:
            data[key] = value


def learner_flags(given: list[str]) -> dict[str, dict[str, str]]:
    """``--learner NAME[=MODEL]``, repeated: a learner per role named NAME (docs/learners.md)."""
    learners: dict[str, dict[str, str]] = {}
    for text in given:
        name, sep, model = (part.strip() for part in text.partition("="))
        if not name or (sep and not model):
            raise ConfigError(
                f"--learner expects NAME or NAME=MODEL, e.g. --learner solver=tiny; got {text!r}."
            )
        if name in learners:
            raise ConfigError(f"--learner {name} is given twice; name each learner once.")
        learners[name] = {"model": model} if model else {}
    return learners


LIST_TYPES = ("list_type", "tuple_type", "set_type")  # pydantic's errors for a lone value


def explain(err: ValidationError) -> str:
    lines = []
    for problem in err.errors():
        path = ".".join(str(p) for p in problem["loc"])
        if problem["type"] == "extra_forbidden":
            lines.append(_unknown_key(path, str(problem["loc"][-1]), problem["loc"][:-1]))
        elif problem["type"] in LIST_TYPES and isinstance(problem.get("input"), (str, int, float)):
            given = problem["input"]
            lines.append(
                f"Config key {path!r}: {problem['msg']} (got {given!r}). Write a list in "
                f"brackets: --set {path}=[{given}] (several: [a, b]; the same in a --config file)."
            )
        else:
            lines.append(f"Config key {path!r}: {problem['msg']} (got {problem.get('input')!r}).")
    return "\n".join(lines)


def _unknown_key(path: str, key: str, loc: tuple[Any, ...]) -> str:
    """The bad key, the closest valid one, and every valid key here with its description."""
    import difflib

    fields = _fields_at(loc)
    close = [name for name in sorted(fields) if name.startswith(key)][:1]
    close = close or difflib.get_close_matches(key, list(fields), n=1)
    prefix = "".join(f"{part}." for part in loc)
    hint = f" Did you mean {prefix + close[0]!r}?" if close else ""
    valid = "\n".join(f"  {prefix}{name}: {text}" for name, text in sorted(fields.items()))
    return f"Unknown config key {path!r}.{hint} Valid keys here:\n{valid}"


def _fields_at(loc: tuple[Any, ...]) -> dict[str, str]:
    """Key name -> description, for the config section at ``loc``."""
    model: type[BaseModel] = RunConfig
    parts = list(loc)
    while parts:
        field = model.model_fields.get(str(parts.pop(0)))
        if field is None:
            return {}
        annotation = field.annotation
        if typing.get_origin(annotation) is dict:  # learners.NAME
            annotation = typing.get_args(annotation)[1]
            if parts:
                parts.pop(0)
        annotation = _section(annotation)
        if annotation is None:
            return {}
        model = annotation
    return {name: _description(field) for name, field in model.model_fields.items()}


def _section(annotation: Any) -> type[BaseModel] | None:
    """The section model an annotation holds (``X`` or ``X | None``), or None."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _description(field: Any) -> str:
    """A key's description; a section without one is described by its first doc line."""
    if field.description:
        return field.description.strip()
    annotation = field.annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        doc = (annotation.__doc__ or "").strip().splitlines()
        return f"{doc[0] if doc else 'A section'} (its keys: {', '.join(annotation.model_fields)})"
    return "(no description)"
