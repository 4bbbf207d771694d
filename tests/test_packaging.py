"""The install metadata in ``pyproject.toml``: what ``pip install`` pulls in beside the package."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
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


def _build(tmp_path: Path, hook: str) -> tuple[Path, subprocess.CompletedProcess]:
    # setuptools' build hook ``hook`` run on a copy of the source tree, into ``dist``, with its
    # deprecation warnings as errors: what pip's isolated build will refuse once they fall due.
    root = PYPROJECT.parent
    copy = tmp_path / "src"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(
        ".git", ".venv*", ".whl", ".ci-cache", ".*_cache", ".hypothesis", "__pycache__",
        "*.egg-info", "build", "dist"))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os
        import warnings
        from setuptools import build_meta
        from setuptools.warnings import SetuptoolsDeprecationWarning
        warnings.simplefilter("error", SetuptoolsDeprecationWarning)
        os.makedirs("dist")
        print(build_meta.{hook}("dist"))
    """)], cwd=copy, capture_output=True, text=True, timeout=300)
    return copy, done


def _setuptools_for_the_build() -> None:
    # The build-system requirement in pyproject.toml (SPDX license expressions): skip with an
    # older setuptools, which pip's isolated build would replace.
    setuptools = pytest.importorskip("setuptools")
    if int(re.match(r"\d+", setuptools.__version__)[0]) < 77:
        pytest.skip(f"setuptools {setuptools.__version__} is older than the build requires")


def test_build_has_no_setuptools_deprecation(tmp_path: Path) -> None:
    """The metadata builds with no setuptools deprecation (the ``license`` table form is one,
    which stops building on setuptools releases after 2027-02-18), and names the license as
    an SPDX expression and its text's file."""
    _setuptools_for_the_build()
    copy, done = _build(tmp_path, "prepare_metadata_for_build_wheel")
    assert done.returncode == 0, done.stderr
    metadata = (copy / "dist" / done.stdout.split()[-1] / "METADATA").read_text()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    assert "License-File: LICENSE" in metadata.splitlines()


def test_sdist_carries_the_runnable_suite(tmp_path: Path) -> None:
    """The sdist (what ``pip download --no-binary`` and distro builds unpack and test) holds
    every module, ``cuda_start.c`` and the license text, and the test suite with what it
    imports: conftest, the helpers and the scripts ``test_bench``/``test_ascend_compile``
    load."""
    _setuptools_for_the_build()
    root = PYPROJECT.parent
    copy, done = _build(tmp_path, "build_sdist")
    assert done.returncode == 0, done.stderr
    with tarfile.open(copy / "dist" / done.stdout.split()[-1]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    needed = {str(p.relative_to(root)) for folder in ("npu_softmax", "tests", "scripts")
              for p in (root / folder).rglob("*.py") if "__pycache__" not in p.parts}
    needed |= {"npu_softmax/cuda_start.c", "LICENSE"}
    assert needed - names == set()
