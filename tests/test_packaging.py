"""The install metadata in ``pyproject.toml``: what ``pip install`` pulls in beside the package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _names(requirements: list[str]) -> set[str]:
    # Distribution names of requirement strings, normalised as pip compares them.
    return {re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", r.strip())[0]).lower()
            for r in requirements}


def test_no_extra_installs_triton_ascend_beside_upstream_triton() -> None:
    """The base requirements name upstream ``triton`` (CUDA and the CPU interpreter), so no
    extra may name ``triton-ascend``: pip would install both, and both write the ``triton``
    package (docs/ascend.md installs this package with ``--no-deps`` instead)."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    assert "triton" in _names(project["dependencies"])
    for extra, requirements in project.get("optional-dependencies", {}).items():
        assert "triton-ascend" not in _names(requirements), extra
