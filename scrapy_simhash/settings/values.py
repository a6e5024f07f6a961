"""Typed reads of ``SIMHASH_*`` settings from any mapping.

Scrapy's ``Settings`` is a mapping, and so is the dict the command line builds from
``-s NAME=VALUE``; reading both through these helpers keeps the command line and a crawl
on the same defaults and the same validation, without importing Scrapy in the core.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scrapy_simhash.exceptions import ConfigurationError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _raw(settings: Mapping[str, Any], name: str, default: Any) -> Any:
    value = settings.get(name, default)
    # Scrapy's Settings stores SettingsAttribute objects internally but returns plain
    # values from get(); a plain dict from the command line holds strings.
    return default if value is None else value


def get_bool(settings: Mapping[str, Any], name: str, default: bool) -> bool:
    """Read a boolean setting; accept the spellings Scrapy's ``getbool`` accepts."""
    value = _raw(settings, name, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigurationError(f"{name} must be a boolean (true/false), got {value!r}")


def get_int(
    settings: Mapping[str, Any],
    name: str,
    default: int,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    """Read an integer setting and check its range."""
    value = _raw(settings, name, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ConfigurationError(f"{name} must be an integer, got {value!r}") from None
    _check_range(name, number, minimum, maximum)
    return number


def get_float(
    settings: Mapping[str, Any],
    name: str,
    default: float,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
) -> float:
    """Read a float setting and check its range."""
    value = _raw(settings, name, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigurationError(f"{name} must be a number, got {value!r}") from None
    _check_range(name, number, minimum, maximum)
    return number


def get_str(settings: Mapping[str, Any], name: str, default: str | None) -> str | None:
    """Read a string setting; an empty string means unset."""
    value = settings.get(name, default)
    if value is None:
        return None
    text = str(value).strip()
    return text or default


def get_choice(
    settings: Mapping[str, Any], name: str, default: str, choices: tuple[str, ...]
) -> str:
    """Read a string setting that must be one of ``choices``."""
    value = (get_str(settings, name, default) or default).lower()
    if value not in choices:
        raise ConfigurationError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def get_list(
    settings: Mapping[str, Any], name: str, default: list[str] | tuple[str, ...]
) -> list[str]:
    """Read a list setting given as a list, a JSON list or a comma-separated string."""
    value = _raw(settings, name, list(default))
    if isinstance(value, str):
        text = value.strip()
        if not text.startswith("["):
            return [part.strip() for part in text.split(",") if part.strip()]
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(
                f"{name} must be a JSON list or comma-separated values, got {text!r}: {exc}"
            ) from None
    if isinstance(value, Mapping) or not isinstance(value, list | tuple | set | frozenset):
        raise ConfigurationError(f"{name} must be a list, got {value!r}")
    return [str(part) for part in value]


def get_dict(settings: Mapping[str, Any], name: str) -> dict[str, Any]:
    """Read a dict setting given as a mapping or as a JSON object string."""
    value = _raw(settings, name, {})
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{name} must be a JSON object: {exc}") from None
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"{name} must be a mapping, got {type(value).__name__}")
    return dict(value)


def _check_range(name: str, number: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and number < minimum:
        raise ConfigurationError(f"{name} must be >= {minimum}, got {number}")
    if maximum is not None and number > maximum:
        raise ConfigurationError(f"{name} must be <= {maximum}, got {number}")
