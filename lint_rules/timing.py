"""Where a run's time goes, by phase: the hidden ``--phase-times FILE`` option.

``timed(phase)`` adds the wall time of a block to this process's total for the
phase; worker processes send their totals back with their results, so a
parallel run's figures are summed over processes (CPU-like, not wall time).
Phases: ``discovery`` (walking the paths), ``typos`` (starting typos and waiting
for it), ``parse`` (``ast.parse``), ``rules`` (everything else done per file:
reading, prefilters, visitors, ``check_file``, fixes) and ``report`` (rendering
and writing the findings). What a run spends outside them is start-up (imports,
configuration, rules reading their sources).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

PHASES = ("discovery", "typos", "parse", "rules", "report")

_totals: dict[str, float] = dict.fromkeys(PHASES, 0.0)


@contextmanager
def timed(phase: str) -> Iterator[None]:
    """Add the time the block takes to ``phase``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        _totals[phase] += time.perf_counter() - start


def reset() -> None:
    """Start this process's totals again (a run in a process that ran one before)."""
    for phase in PHASES:
        _totals[phase] = 0.0


def add(phase: str, seconds: float) -> None:
    _totals[phase] += seconds


def snapshot() -> dict[str, float]:
    """This process's totals so far, by phase."""
    return dict(_totals)


def merge(totals: Mapping[str, float]) -> None:
    """Add another process's totals (a worker's) to this one's."""
    for phase, seconds in totals.items():
        _totals[phase] += seconds


def since(before: Mapping[str, float]) -> dict[str, float]:
    """The totals added since ``before`` (a ``snapshot``)."""
    return {phase: _totals[phase] - before.get(phase, 0.0) for phase in PHASES}
