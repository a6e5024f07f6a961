"""Progress bars (tqdm) on stderr, drawn only where a person is watching.

A bar is useful on a terminal and noise in a pipe or a log file, so it is off unless
stderr is a terminal (``force`` draws it anyway: ``dedup --progress``). Output on stdout
is never touched, so piping a command's results stays clean either way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, TypeVar

T = TypeVar("T")


def wanted(stream: TextIO | None = None, *, force: bool = False) -> bool:
    """Whether to draw: ``force``, or ``stream`` (stderr) is a terminal."""
    stream = stream or sys.stderr
    try:
        return force or stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return force


def bar(total: int | None, what: str, *, force: bool = False, **options: Any) -> Any:
    """A tqdm bar counting ``what`` (e.g. "files") up to ``total``; disabled off-terminal."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        unit=f" {what}",
        file=sys.stderr,
        disable=not wanted(sys.stderr, force=force),
        dynamic_ncols=True,
        **options,
    )


def counting(items: Iterable[T], progress: Any) -> Iterator[T]:
    """Yield ``items``, advancing ``progress`` (a :func:`bar`) by one after each."""
    for item in items:
        yield item
        progress.update(1)


def track(items: Iterable[T], total: int | None, what: str, *, force: bool = False) -> Iterator[T]:
    """Yield ``items`` while a bar counts them."""
    with bar(total, what, force=force) as progress:
        yield from counting(items, progress)
