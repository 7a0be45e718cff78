"""Every job of every GitHub workflow has a time limit: a hung job fails, it does not sit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, import-not-found, unused-ignore]

WORKFLOWS = sorted((Path(__file__).resolve().parents[1] / ".github" / "workflows").glob("*.y*ml"))


def test_there_are_workflows_to_check() -> None:
    assert WORKFLOWS, "no workflow found under .github/workflows"


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[path.name for path in WORKFLOWS])
def test_every_job_has_timeout_minutes(workflow: Path) -> None:
    document: dict[str, Any] = yaml.safe_load(workflow.read_text(encoding="utf-8"))
    jobs: dict[str, dict[str, Any]] = document.get("jobs") or {}
    assert jobs, f"{workflow.name} has no jobs"
    unbounded = [
        name
        for name, job in jobs.items()
        # A job that calls a reusable workflow takes its limits from that workflow.
        if "uses" not in job and not isinstance(job.get("timeout-minutes"), (int, str))
    ]
    assert not unbounded, f"{workflow.name}: jobs without timeout-minutes: {unbounded}"
