"""Graph capture other than ``torch.compile``: ``torch.export`` (strict too), ``torch.jit.trace``,
``torch.fx.symbolic_trace`` and ``make_fx`` record npu_softmax's calls, and the captured graphs
run the kernels on new inputs (other shapes included) with the eager results; dispatch modes see
the custom ops."""

from __future__ import annotations

import io
import warnings

import pytest
import torch
from _ref import assert_close, assert_softmax_close, reference, reference_grad
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils._python_dispatch import TorchDispatchMode

import npu_softmax as ns
from npu_softmax.checks import supported_dtypes


class _Heads(torch.nn.Module):
    """Every public entry point once: the modules, a dtype, a temperature, out= and in place.
    ``dtype`` is the ``dtype=`` argument: float64, or float16 where float64 is not served
    (Ascend)."""

    def __init__(self, device: str) -> None:
        super().__init__()
        self.softmax = ns.Softmax(dim=-1)
        self.log_softmax = ns.LogSoftmax(dim=0, temperature=2.0)
        served = supported_dtypes(torch.device(device))
        self.dtype = torch.float64 if torch.float64 in served else torch.float16

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = torch.full_like(x, float("nan"))  # a node that is not recorded leaves it NaN
        ns.log_softmax(x, 1, out=out)
        inplace = x.clone()
        ns.softmax_(inplace, 0, temperature=0.5)
        return (self.softmax(x), self.log_softmax(x), ns.softmax(x, -1, dtype=self.dtype), out,
                inplace)


def _check_heads(model: _Heads, x: torch.Tensor, ys: tuple[torch.Tensor, ...]) -> None:
    # ``model``'s outputs against float64.
    probs, logs, cast, out, inplace = ys
    assert_softmax_close(probs, reference(x, -1))
    assert_close(logs, reference(x, 0, log=True, temperature=2.0), x.dtype)
    assert cast.dtype == model.dtype
    assert_softmax_close(cast, reference(x, -1, dtype=model.dtype))
    assert_close(out, reference(x, 1, log=True), x.dtype)
    assert_softmax_close(inplace, reference(x, 0, temperature=0.5))


def _targets(graph: torch.fx.Graph) -> set[object]:
    return {node.target for node in graph.nodes if node.op == "call_function"}


def test_export_with_a_dynamic_batch(kernel_device: str) -> None:
    """``torch.export`` records the custom ops (out= and in place as their functional forms)
    and the exported program runs them on a batch size it was not exported with, also once
    saved and loaded again."""
    model = _Heads(kernel_device)
    x = torch.randn(6, 37, device=kernel_device)
    batch = torch.export.Dim("batch", min=2)
    exported = torch.export.export(model, (x,), dynamic_shapes=({0: batch},))
    assert {torch.ops.npu_softmax.softmax.default, torch.ops.npu_softmax.log_softmax.default} \
        <= _targets(exported.graph)
    fresh = torch.randn(11, 37, device=kernel_device)
    _check_heads(model, fresh, exported.module()(fresh))
    # Saved and loaded again (a deployed program): the ops are found by name and schema.
    buffer = io.BytesIO()
    torch.export.save(exported, buffer)
    buffer.seek(0)
    fresh = torch.randn(3, 37, device=kernel_device)
    _check_heads(model, fresh, torch.export.load(buffer).module()(fresh))


#: torch.jit.trace warns that it is deprecated (torch 2.13), yet it still runs and is still met.
_JIT = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@_JIT
@pytest.mark.parametrize("kept", [False, True], ids=["first_call", "signature_kept"])
def test_jit_trace(kernel_device: str, kept: bool) -> None:
    """``torch.jit.trace`` records the custom ops, never a launch of the kernels (which it would
    replay as an empty output), also where an eager call has kept the signature's launch."""
    model = _Heads(kernel_device)
    x = torch.randn(5, 33, device=kernel_device)
    if kept:
        model(x)
    with warnings.catch_warnings():
        # The checks read no traced size as a Python value (as torch's own out= does not).
        warnings.simplefilter("error", torch.jit.TracerWarning)
        traced = torch.jit.trace(model, x)
    recorded = {node.kind() for node in traced.inlined_graph.nodes()}
    assert {"npu_softmax::softmax", "npu_softmax::log_softmax_out",
            "npu_softmax::softmax_"} <= recorded, recorded
    fresh = torch.randn(9, 40, device=kernel_device)
    _check_heads(model, fresh, traced(fresh))


@_JIT
def test_jit_trace_gradient(kernel_device: str) -> None:
    """A traced function differentiates through the backward kernels."""
    traced = torch.jit.trace(lambda t: ns.log_softmax(t, 0, temperature=0.5),
                             torch.randn(4, 21, device=kernel_device, requires_grad=True))
    x = torch.randn(7, 21, device=kernel_device, requires_grad=True)
    dy = torch.randn(7, 21, device=kernel_device)
    traced(x).backward(dy)
    assert_close(x.grad, reference_grad(torch.log_softmax, x, dy, 0, temperature=0.5),
                 torch.float32)


def _ops_into(x: torch.Tensor, out: torch.Tensor, inplace: torch.Tensor, dim: int) -> None:
    # Scripted code calling the ops themselves, as docs/pytorch.md says it may: out= and in place.
    torch.ops.npu_softmax.log_softmax_out(x, dim, 1.0, None, out)
    torch.ops.npu_softmax.softmax_(inplace, dim, 0.5, None)


def _ops_forward_backward(x: torch.Tensor, dy: torch.Tensor,
                          dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    # ... and the forward and backward ops.
    y = torch.ops.npu_softmax.softmax(x, dim, None, 1.0, None)
    return y, torch.ops.npu_softmax.softmax_backward(dy, y, dim, x.dtype, 1.0, None)


@_JIT
@pytest.mark.parametrize("dim", [-1, -2])
def test_jit_script_ops_with_a_negative_dim(kernel_device: str, dim: int) -> None:
    """Scripted code calls the ops with a dim that counts from the end, as torch's ops take
    it: each op computes over that dim and touches no element past its tensors (up to commit
    a863bb6 the layout took a negative dim for none at all, and the kernels read and wrote past
    the tensors). A dim out of range raises IndexError."""
    # Views of buffers whose elements past them must keep a value that no result takes.
    bufs = [torch.full((2, 6, 35), 7.0, device=kernel_device) for _ in range(3)]
    x, out, inplace = (b[0] for b in bufs)
    x.normal_()
    out.fill_(float("nan"))
    inplace.copy_(x)
    torch.jit.script(_ops_into)(x, out, inplace, dim)
    assert all(b[1].eq(7.0).all() for b in bufs)
    assert_close(out, reference(x, dim, log=True), torch.float32)
    assert_softmax_close(inplace, reference(x, dim, temperature=0.5))
    dy = torch.randn_like(x)
    y, dx = torch.jit.script(_ops_forward_backward)(x, dy, dim)
    assert_softmax_close(y, reference(x, dim))
    assert_close(dx, reference_grad(torch.softmax, x, dy, dim), torch.float32)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ops.npu_softmax.softmax(x, 2, None, 1.0, None)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ops.npu_softmax.softmax_out(x, -3, 1.0, None, torch.empty_like(x))


def test_strict_export(kernel_device: str) -> None:
    """``torch.export.export(strict=True)`` (TorchDynamo) traces every entry point too."""
    model = _Heads(kernel_device)
    exported = torch.export.export(model, (torch.randn(6, 37, device=kernel_device),),
                                   strict=True)
    fresh = torch.randn(6, 37, device=kernel_device)
    _check_heads(model, fresh, exported.module()(fresh))


class _Ops(TorchDispatchMode):
    """A dispatch mode that records the name of every op it sees."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __torch_dispatch__(self, func: object, types: object, args: tuple = (),
                           kwargs: dict | None = None) -> object:
        self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


def test_dispatch_modes_see_the_ops(kernel_device: str) -> None:
    """Under a Python dispatch mode (what ``make_fx``, ``FlopCounterMode`` and logging modes
    are) a call goes through the custom ops, which the mode sees, as it sees ``aten._softmax``
    for torch's softmax; also where an eager call has kept the signature's launch."""
    model = _Heads(kernel_device)
    x = torch.randn(5, 33, device=kernel_device, requires_grad=True)
    dy = torch.randn(5, 33, device=kernel_device)
    for _ in range(2):  # the second time, every signature is kept
        with _Ops() as mode:
            ys = model(x.detach())
            (dx,) = torch.autograd.grad(ns.softmax(x, 0, temperature=0.5), x, dy)
        _check_heads(model, x.detach(), ys)
        assert_close(dx, reference_grad(torch.softmax, x, dy, 0, 0.5), torch.float32)
        assert {"npu_softmax.softmax.default", "npu_softmax.log_softmax_out.default",
                "npu_softmax.softmax_.default",
                "npu_softmax.softmax_backward.default"} <= set(mode.seen), mode.seen


def test_make_fx_of_real_tensors(kernel_device: str) -> None:
    """``make_fx(tracing_mode="real")`` records the custom ops, and its graph runs them on new
    inputs (it would hold only the outputs' allocations if the kernels ran around the
    dispatcher)."""
    model = _Heads(kernel_device)
    x = torch.randn(6, 37, device=kernel_device)
    model(x)  # signatures kept
    graph_module = make_fx(model, tracing_mode="real")(x)
    assert {torch.ops.npu_softmax.softmax.default,
            torch.ops.npu_softmax.log_softmax_out.default} <= _targets(graph_module.graph)
    fresh = torch.randn(6, 37, device=kernel_device)
    _check_heads(model, fresh, graph_module(fresh))


def test_fx_symbolic_trace(kernel_device: str) -> None:
    """``torch.fx.symbolic_trace`` records each public call as one node (as ``torch.fx.wrap``
    does), whose checks and kernels run when the graph runs."""
    model = _Heads(kernel_device)
    graph_module = torch.fx.symbolic_trace(model)
    assert {ns.softmax, ns.log_softmax, ns.softmax_} <= _targets(graph_module.graph)
    fresh = torch.randn(8, 29, device=kernel_device)
    _check_heads(model, fresh, graph_module(fresh))
    with pytest.raises(IndexError):
        graph_module(torch.randn(8, device=kernel_device))  # dim 1 checked at run time



def test_fx_symbolic_trace_of_modules_without_a_dim(device: str) -> None:
    """``torch.fx.symbolic_trace`` of the modules built with ``dim=None`` (the dim of a
    ``torch.nn.Softmax()``, copied in a module swap) records one node, whose dim follows torch's
    legacy rule for the rank of each input the graph runs on, as a traced
    ``torch.nn.Softmax()`` does. (The rule read the rank of the traced ``Proxy``:
    ``TraceError``.)"""
    for module, log in ((ns.Softmax, False), (ns.LogSoftmax, True)):
        graph_module = torch.fx.symbolic_trace(module(dim=None, temperature=0.5))
        for shape, dim in (((4, 9), 1), ((3, 4, 9), 0), ((9,), 0)):
            x = torch.randn(shape, device=device)
            with pytest.warns(UserWarning, match="dim=None"):
                y = graph_module(x)
            assert_close(y, reference(x, dim, log, temperature=0.5), torch.float32)
