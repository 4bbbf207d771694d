"""``enable()`` routes torch's own softmax entry points to the Triton kernels; ``disable()``
gives them back."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _ref import assert_close, reference, reference_grad

import npu_softmax as ns
from npu_softmax import eager, launcher

ENTRY_POINTS = {
    "torch.softmax": (lambda x: torch.softmax(x, -1), False),
    "F.softmax": (lambda x: F.softmax(x, dim=-1), False),
    "Tensor.softmax": (lambda x: x.softmax(-1), False),
    "torch.log_softmax": (lambda x: torch.log_softmax(x, -1), True),
    "F.log_softmax": (lambda x: F.log_softmax(x, dim=-1), True),
    "Tensor.log_softmax": (lambda x: x.log_softmax(-1), True),
}


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of forward and backward kernel launches (the real launches still run), starting
    with no kept eager calls, so a first call of each signature plans and launches."""
    monkeypatch.setattr(eager, "_calls", {})
    counts = {"forward": 0, "backward": 0}
    forward, backward = launcher.launch_softmax, launcher.launch_softmax_backward

    def count_forward(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        counts["forward"] += 1
        return forward(*args, **kwargs)

    def count_backward(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        counts["backward"] += 1
        return backward(*args, **kwargs)

    monkeypatch.setattr(launcher, "launch_softmax", count_forward)
    monkeypatch.setattr(launcher, "launch_softmax_backward", count_backward)
    yield counts
    ns.disable()


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_enable_routes_and_disable_restores(kernel_device: str, launches: dict[str, int],
                                            entry: str) -> None:
    fn, log = ENTRY_POINTS[entry]
    x = torch.randn(17, 131, device=kernel_device, requires_grad=True)
    dy = torch.randn(17, 131, device=kernel_device)
    ns.enable()
    assert ns.is_enabled()
    y = fn(x)
    y.backward(dy)
    assert launches == {"forward": 1, "backward": 1}
    ns.disable()
    assert not ns.is_enabled()
    fn(x).backward(dy)  # torch's own kernels again
    assert launches == {"forward": 1, "backward": 1}
    assert_close(y, reference(x, -1, log), torch.float32)
    ref_fn = torch.log_softmax if log else torch.softmax
    assert_close(x.grad, reference_grad(ref_fn, x, 2 * dy, -1), torch.float32)


def test_enabled_context_and_dtypes(kernel_device: str, launches: dict[str, int]) -> None:
    x = torch.randn(5, 33, device=kernel_device).to(torch.bfloat16)
    with ns.enabled():
        y = torch.softmax(x, 1, dtype=torch.float32)  # torch casts, then our kernel runs
        z = F.log_softmax(x, 0)
    assert launches["forward"] == 2 and not ns.is_enabled()
    assert y.dtype == torch.float32 and z.dtype == torch.bfloat16
    assert_close(y, reference(x, 1, False, dtype=torch.float32), torch.float32)
    assert_close(z, reference(x, 0, True), torch.bfloat16)
    ns.enable()
    with ns.enabled():
        pass
    assert ns.is_enabled()  # a block inside enable() leaves it enabled


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.bool])
def test_enabled_refuses_what_torch_refuses(kernel_device: str, dtype: torch.dtype) -> None:
    """Routed, an integer or bool input without ``dtype=`` is refused as torch refuses it
    (never computed in floats); with ``dtype=`` torch casts it and the kernels run."""
    x = torch.randint(0, 3, (2, 7), device=kernel_device).to(dtype)
    with ns.enabled():
        with pytest.raises((NotImplementedError, RuntimeError)):
            torch.softmax(x, -1)
        with pytest.raises((NotImplementedError, RuntimeError)):
            torch.log_softmax(x, 0)
        y = torch.softmax(x, -1, dtype=torch.float32)
    assert_close(y, reference(x, -1, dtype=torch.float32), torch.float32)


def test_enabled_leaves_other_devices(kernel_device: str, launches: dict[str, int]) -> None:
    if launcher.serves(torch.device("cpu")):
        pytest.skip("the interpreter serves CPU tensors too")
    with ns.enabled():
        torch.softmax(torch.randn(4, 8), -1)
    assert launches["forward"] == 0


@pytest.mark.parametrize("log", [False, True])
def test_routed_half_to_float(kernel_device: str, launches: dict[str, int], log: bool) -> None:
    """``_softmax(x, dim, half_to_float=True)`` (what torch's CUDA softmax calls for a 2-byte
    input with ``dtype=torch.float32``), routed: a float32 result, from one launch of the
    kernels on the 2-byte input, as torch's own kernel gives."""
    x = torch.randn(6, 45, device=kernel_device).to(torch.float16)
    op = torch.ops.aten._log_softmax if log else torch.ops.aten._softmax
    with ns.enabled():
        y = op(x, -1, True)
    assert launches["forward"] == 1
    assert y.dtype == torch.float32
    assert_close(y, reference(x, -1, log, dtype=torch.float32), torch.float32)
