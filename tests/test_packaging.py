"""The install metadata in ``pyproject.toml``: what ``pip install`` pulls in beside the package."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
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


def test_sdist_carries_the_runnable_suite(tmp_path: Path) -> None:
    """The sdist (what ``pip download --no-binary`` and distro builds unpack and test) holds
    every module and ``cuda_start.c``, and the test suite with what it imports: conftest, the
    helpers and the scripts ``test_bench``/``test_ascend_compile`` load."""
    pytest.importorskip("setuptools.build_meta")
    root = PYPROJECT.parent
    copy = tmp_path / "src"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(
        ".git", ".venv*", ".whl", ".ci-cache", ".*_cache", ".hypothesis", "__pycache__",
        "*.egg-info", "build", "dist"))
    done = subprocess.run([sys.executable, "-c", "from setuptools import build_meta; "
                           "print(build_meta.build_sdist('dist'))"], cwd=copy,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with tarfile.open(copy / "dist" / done.stdout.split()[-1]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    needed = {str(p.relative_to(root)) for folder in ("npu_softmax", "tests", "scripts")
              for p in (root / folder).rglob("*.py") if "__pycache__" not in p.parts}
    needed.add("npu_softmax/cuda_start.c")
    assert needed - names == set()
