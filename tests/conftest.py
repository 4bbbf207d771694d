"""One suite for every device: the ``device`` fixture yields each device that is present.

``npu`` when torch_npu sees an NPU, ``cuda`` when torch sees a GPU, and ``cpu`` always. On a
machine with neither, ``TRITON_INTERPRET=1`` is set here, before Triton is imported, so ``cpu``
runs the Triton kernels under Triton's interpreter; next to a GPU or NPU, ``cpu`` tests the
documented ``torch.softmax`` fallback (run with ``TRITON_INTERPRET=1`` to interpret instead).
Interpreted runs skip the interpreter's repeated language patching (``_interpreter.py``).
"""

from __future__ import annotations

import os

import pytest
import torch


def _npu_available() -> bool:
    try:
        import torch_npu  # noqa: F401
    except ImportError:
        return False
    return torch.npu.is_available()


DEVICES = [d for d, present in (("npu", _npu_available()), ("cuda", torch.cuda.is_available()))
           if present] + ["cpu"]
if DEVICES == ["cpu"]:
    os.environ.setdefault("TRITON_INTERPRET", "1")
if os.environ.get("TRITON_INTERPRET") == "1":
    from _interpreter import skip_repeated_patching

    skip_repeated_patching()


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    """A device type the suite runs on."""
    return request.param


@pytest.fixture
def kernel_device(device: str) -> str:
    """A device whose tensors run the Triton kernels (skips the CPU torch fallback)."""
    import npu_softmax.launcher as launcher

    if not launcher.serves(torch.device(device)):
        pytest.skip(f"{device} tensors use the torch.softmax fallback in this process")
    return device


@pytest.fixture(autouse=True)
def _fresh_seed() -> None:
    # Fresh random inputs every run, printed on failure so a case can be replayed.
    seed = int.from_bytes(os.urandom(4), "little")
    torch.manual_seed(seed)
    print(f"torch seed {seed}")
