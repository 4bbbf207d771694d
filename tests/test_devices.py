"""Tensors on two devices of one type (GPUs or NPUs) in one process: each call runs on its
tensors' device and leaves the current device as it was. Skipped where fewer than two are seen."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import torch
from _ref import assert_close, assert_softmax_close, compile_backend, reference, reference_grad

import npu_softmax
from npu_softmax import eager, launcher


def _two_devices(kernel_device: str) -> tuple[Any, int, str]:
    """The device module, the current device's index and another device (``"cuda:1"``)."""
    module = getattr(torch, kernel_device, None)
    if module is None or not hasattr(module, "device_count") or module.device_count() < 2:
        pytest.skip(f"one {kernel_device} device or none")
    current = module.current_device()
    return module, current, f"{kernel_device}:{1 if current == 0 else 0}"


@pytest.mark.parametrize("variant", [None, "split", "cols"])
def test_a_device_that_is_not_the_current_one(kernel_device: str, variant: str | None) -> None:
    """Tensors on a second GPU/NPU while the first is current: the kernels launch on the
    tensors' device (its stream), forward, out=, in place and backward, and a repeat call too;
    the current device is left as it was."""
    module, current, other = _two_devices(kernel_device)
    x = torch.randn(37, 3001, device=other, requires_grad=True)
    dy = torch.randn_like(x)
    dim = 0 if variant == "cols" else 1
    for _ in range(2):  # the first call plans, the second repeats the kept launch
        y = npu_softmax.softmax(x, dim, variant=variant)
        assert y.device == x.device
        assert_softmax_close(y, reference(x, dim))
    (dx,) = torch.autograd.grad(y, x, dy)
    assert_close(dx, reference_grad(torch.softmax, x, dy, dim), torch.float32)
    out = torch.full((37, 3001), float("nan"), device=other)
    npu_softmax.log_softmax(x.detach(), -1, variant=variant, out=out)
    assert_close(out, reference(x, -1, log=True), torch.float32)
    z = x.detach().clone()
    npu_softmax.softmax_(z, -1, variant=variant)
    assert_softmax_close(z, reference(x, -1))
    assert module.current_device() == current


@pytest.mark.parametrize("variant", [None, "online", "split", "cols"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_two_devices_in_turn(kernel_device: str, variant: str | None,
                             dtype: torch.dtype) -> None:
    """One call signature on both devices in turn, three rounds: each device keeps its own
    compiled kernels, grid and kept launch, so no call runs another device's kernel or writes
    another device's memory. Every output is NaN-filled first."""
    module, current, other = _two_devices(kernel_device)
    dim = 0 if variant == "cols" else -1
    for _ in range(3):
        for device in (other, f"{kernel_device}:{current}"):
            x = torch.randn(45, 2999, device=device).mul(4).to(dtype)
            out = torch.full_like(x, float("nan"))
            npu_softmax.softmax(x, dim, variant=variant, out=out)
            assert_softmax_close(out, reference(x, dim))
            logp = npu_softmax.log_softmax(x, dim, variant=variant)
            assert logp.device == x.device
            assert_close(logp, reference(x, dim, log=True), dtype)
    assert module.current_device() == current


def test_first_calls_from_threads_on_two_devices(kernel_device: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads start together on both devices, with nothing compiled or kept (each thread's
    current device is the first one): every result is right, on its own device."""
    _, current, other = _two_devices(kernel_device)
    monkeypatch.setattr(launcher, "kernels", {})
    monkeypatch.setattr(eager, "_calls", {})
    jobs = [(device, variant, dtype) for device in (f"{kernel_device}:{current}", other)
            for variant in ("tile", "online", "split", "cols")
            for dtype in (torch.float32, torch.float16) for _ in range(2)]
    barrier = threading.Barrier(len(jobs))
    results: dict[int, tuple[torch.Tensor, torch.Tensor, int]] = {}
    errors: list[BaseException] = []

    def work(i: int, device: str, variant: str, dtype: torch.dtype) -> None:
        try:
            x = torch.randn(7, 3000, device=device).mul(3).to(dtype)
            dim = 0 if variant == "cols" else 1
            barrier.wait()
            results[i] = (x, npu_softmax.softmax(x, dim, variant=variant), dim)
        except BaseException as e:  # reported below, with the thread's case
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i, *job)) for i, job in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, (x, y, dim) in results.items():
        assert y.device == x.device
        assert_softmax_close(y, reference(x, dim), f"job {jobs[i]}")


def test_compiled_on_the_other_device(kernel_device: str) -> None:
    """``torch.compile(fullgraph=True)`` over tensors on the device that is not current, at
    two shapes (the second recompiles or runs a dynamic graph)."""
    module, current, other = _two_devices(kernel_device)

    def f(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return npu_softmax.softmax(t, -1, temperature=0.8), npu_softmax.log_softmax(t, 0)

    compiled = torch.compile(f, fullgraph=True, backend=compile_backend(kernel_device))
    for shape in ((64, 1000), (33, 5001)):
        x = torch.randn(shape, device=other)
        probs, logp = compiled(x)
        assert probs.device == logp.device == x.device
        assert_softmax_close(probs, reference(x, -1, temperature=0.8))
        assert_close(logp, reference(x, 0, log=True), torch.float32)
    assert module.current_device() == current


def test_cuda_graph_on_the_other_device(kernel_device: str) -> None:
    """A CUDA graph captured on the second GPU (made current for the capture, as torch
    requires): kept launches and a first call planned inside the capture replay there."""
    if kernel_device != "cuda":
        pytest.skip("CUDA graphs need a CUDA device")
    _, _, other = _two_devices(kernel_device)
    with torch.cuda.device(other):
        x = torch.randn(64, 1000, device=other)
        out = torch.full_like(x, float("nan"))
        for _ in range(2):  # compile and size the grids outside the capture
            npu_softmax.softmax(x, out=out)
            npu_softmax.softmax(x, 0)
        wide = torch.randn(3, 70001, device=other)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(stream), torch.cuda.graph(graph):
            npu_softmax.softmax(x, out=out)
            cols = npu_softmax.softmax(x, 0)
            split = npu_softmax.log_softmax(wide, -1)  # its first call: planned in the capture
        for _ in range(2):
            x.copy_(torch.randn_like(x))
            wide.copy_(torch.randn_like(wide))
            graph.replay()
            torch.cuda.synchronize(other)
            assert_softmax_close(out, reference(x, -1))
            assert_softmax_close(cols, reference(x, 0))
            assert_close(split, reference(wide, -1, log=True), torch.float32)
