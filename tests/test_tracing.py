"""Graph capture other than ``torch.compile``: ``torch.export``, ``torch.jit.trace`` and
``torch.fx.symbolic_trace`` record npu_softmax's calls, and the captured graphs run the kernels
on new inputs (other shapes included) with the eager results."""

from __future__ import annotations

import io
import warnings

import pytest
import torch
from _ref import assert_close, assert_softmax_close, reference, reference_grad

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
        # out='s shape check reads traced sizes; the trace does not depend on it.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
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

