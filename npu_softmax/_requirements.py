"""Fail at ``import npu_softmax`` with an install hint when no usable Triton is importable,
and warn where upstream triton and triton-ascend were both installed over each other.

Without this check a missing or foreign ``triton`` surfaces deep inside the kernels module as
``ModuleNotFoundError`` or ``AttributeError: module 'triton' has no attribute 'jit'``, which
does not say which package to install; a ``triton`` package mixed from the two distributions
surfaces later still, as a device the active driver cannot serve.
"""

from __future__ import annotations

import re
import warnings
from importlib import metadata

#: Oldest Triton the kernels are written for (triton-ascend 3.2.0; upstream is 3.6+).
MIN_TRITON = (3, 2)
#: First Triton whose CPU interpreter runs on numpy 2.4+ (older ones, triton-ascend 3.2.0 too,
#: take ``int()`` of a one-element array, which numpy 2.4 refuses, in every persistent loop).
INTERPRETER_NUMPY_FIX = (3, 7)

INSTALL_HINT = (
    "install Triton for your device: `pip install 'triton>=3.6'` for NVIDIA GPUs or the CPU "
    "interpreter, or on Ascend NPUs `pip install torch_npu triton-ascend==3.2.0` in an "
    "environment without upstream triton (then npu_softmax with `pip install --no-deps`, "
    "which keeps upstream triton out)"
)


#: The distributions that install the ``triton`` package: upstream's and triton-ascend.
TRITON_DISTRIBUTIONS = ("triton", "triton-ascend")


def installed_tritons() -> list[str]:
    """``"name version"`` of each of ``TRITON_DISTRIBUTIONS`` that pip has installed."""
    found = []
    for name in TRITON_DISTRIBUTIONS:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pass
    return found


def require_triton() -> None:
    """Import ``triton`` and check it is a Triton build of at least ``MIN_TRITON``; warn
    (``RuntimeWarning``) where upstream triton and triton-ascend are both installed, since each
    wrote its files over the other's (a plain ``pip install npu_softmax`` beside triton-ascend
    does that: its requirements name upstream triton).

    Raises:
        ImportError: naming what is wrong and what to install.
    """
    both = installed_tritons()
    if len(both) == len(TRITON_DISTRIBUTIONS):
        warnings.warn(f"npu_softmax: {' and '.join(both)} are both installed, and both write the "
                      "'triton' package, so one overwrote the other's files. Keep only the one "
                      "for your device: on Ascend NPUs `pip uninstall -y triton triton-ascend && "
                      "pip install triton-ascend==3.2.0` (and install npu_softmax with `pip "
                      "install --no-deps`), elsewhere `pip uninstall -y triton triton-ascend && "
                      "pip install triton`", RuntimeWarning, stacklevel=3)
    try:
        import triton
    except ImportError as e:
        raise ImportError(f"npu_softmax needs Triton, which is not importable ({e}); "
                          f"{INSTALL_HINT}") from e
    version = getattr(triton, "__version__", None)
    if not isinstance(version, str) or not hasattr(triton, "jit"):
        where = getattr(triton, "__file__", None) or list(getattr(triton, "__path__", []))
        raise ImportError(f"npu_softmax needs Triton, but the 'triton' module found at {where} "
                          f"is not a Triton build (no version or triton.jit); {INSTALL_HINT}")
    found = _major_minor(version)
    if found is None or found < MIN_TRITON:
        raise ImportError(f"npu_softmax needs Triton >= {'.'.join(map(str, MIN_TRITON))}, "
                          f"found triton {version}; {INSTALL_HINT}")
    # Triton is usable from here on, so _compat (which imports it) may be.
    from ._compat import interpreter_enabled

    problem = interpreter_numpy_problem(version)
    # Under TRITON_INTERPRET=1, fail here rather than as an InterpreterError inside the first
    # kernel.
    if problem and interpreter_enabled():
        raise ImportError(problem)


def interpreter_numpy_problem(triton_version: str) -> str | None:
    """Why Triton ``triton_version``'s CPU interpreter cannot run beside this numpy (what to
    install instead), or None where it can."""
    found = _major_minor(triton_version)
    if found is None or found >= INTERPRETER_NUMPY_FIX:
        return None
    try:
        import numpy
    except ImportError:  # the interpreter's own import says so
        return None
    found = _major_minor(numpy.__version__)
    if found is None or found < (2, 4):
        return None
    return (f"Triton {triton_version}'s CPU interpreter (TRITON_INTERPRET=1) fails on numpy "
            f"{numpy.__version__}, which refuses int() of a one-element array "
            "(triton-lang/triton#9171, fixed in Triton 3.7): `pip install 'numpy<2.4'`, or a "
            "Triton >= 3.7 where no torch pins an older one")


def _major_minor(version: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a version string, or None where it does not start so."""
    found = re.match(r"(\d+)\.(\d+)", version)
    return None if found is None else (int(found[1]), int(found[2]))
