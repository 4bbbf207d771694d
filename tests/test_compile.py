"""torch.compile (fullgraph: no graph break), torch.library.opcheck, CUDA-graph capture."""

from __future__ import annotations

import pytest
import torch
from _ref import (
    assert_close,
    assert_softmax_close,
    autocast_or_skip,
    compile_backend,
    reference,
    reference_grad,
)

import npu_softmax as ns
from npu_softmax import eager, launcher, ops
from npu_softmax.checks import supported_dtypes


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> None:
    torch._dynamo.reset()


def test_opcheck(kernel_device: str) -> None:
    # Schema, fake kernels, autograd registration and AOT dispatch of every op.
    x = torch.randn(5, 37, device=kernel_device, requires_grad=True)
    for op in (ops.softmax, ops.log_softmax):
        torch.library.opcheck(op, (x, 1, None, 0.5, None))
        wide = (torch.float64 if torch.float64 in supported_dtypes(torch.device(kernel_device))
                else torch.float16)
        torch.library.opcheck(op, (x.detach().t(), 0, wide, 1.0, "online"))
    y = ops.softmax(x.detach(), 1, None, 1.0, None)
    for op in (ops.softmax_backward, ops.log_softmax_backward):
        torch.library.opcheck(op, (torch.randn_like(y), y, 1, torch.float32, 2.0, None))
    for op in (ops.softmax_out, ops.log_softmax_out):
        torch.library.opcheck(op, (x.detach(), 1, 1.0, None, torch.empty_like(y)))
    for op in (ops.softmax_, ops.log_softmax_):
        torch.library.opcheck(op, (x.detach().clone(), 0, 3.0, "split"))


_OPS = {"softmax": (ops.softmax, ops.softmax_backward, ops.softmax_out, ops.softmax_, False),
        "log_softmax": (ops.log_softmax, ops.log_softmax_backward, ops.log_softmax_out,
                        ops.log_softmax_, True)}


@pytest.mark.parametrize("name", _OPS)
def test_ops_autograd_and_versions(kernel_device: str, name: str) -> None:
    """What the ops do for autograd when called directly (as a compiled graph or a trace calls
    them): the forward op's gradient is the kernels'; the gradient op's result refuses a second
    backward; the out= and in-place ops refuse arguments that require grad and bump the version
    of the tensor they write, so autograd refuses a gradient that saved its old contents."""
    op, bwd, out_op, inplace, log = _OPS[name]
    torch_fn = torch.log_softmax if log else torch.softmax
    x = torch.randn(4, 37, device=kernel_device, requires_grad=True)
    dy = torch.randn(4, 37, device=kernel_device)
    # Trailing arguments left at their defaults, as a graph may pass them, or given.
    (dx,) = torch.autograd.grad(op(x, 1), x, dy)
    assert_close(dx, reference_grad(torch_fn, x, dy, 1), torch.float32)
    (dx,) = torch.autograd.grad(op(x, 1, None, 0.5, None), x, dy)
    assert_close(dx, reference_grad(torch_fn, x, dy, 1, 0.5), torch.float32)

    g = bwd(dy, op(x, 1).detach().requires_grad_(), 1, torch.float32)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="no derivative"):
        g.sum().backward()

    with pytest.raises(RuntimeError, match="do not support autograd"):
        out_op(x, 1, 1.0, None, torch.empty_like(x))
    with pytest.raises(RuntimeError, match="do not support autograd"):
        inplace(x * 1, 1, 1.0, None)

    for kind in ("out", "in place"):
        h = x * 1
        saved = h.sin()  # saves h for its gradient
        version = h._version
        with torch.no_grad():
            if kind == "out":
                out_op(x.detach(), 1, 1.0, None, h)
            else:
                inplace(h, 1, 1.0, None)
        assert h._version > version, kind
        assert_close(h, reference(x.detach(), 1, log=log), torch.float32)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            saved.sum().backward()


def test_compile_fullgraph(kernel_device: str) -> None:
    def f(x: torch.Tensor, temperature: float) -> torch.Tensor:
        return ns.softmax(x * 2, -1, temperature=temperature) + ns.log_softmax(x, 0).exp()

    compiled = torch.compile(f, fullgraph=True, backend=compile_backend(kernel_device))
    x = torch.randn(8, 33, device=kernel_device, requires_grad=True)
    xe = x.detach().clone().requires_grad_()
    for temperature in (0.7, 1.3):  # the second call may trace temperature symbolically
        x.grad = xe.grad = None
        compiled(x, temperature).square().sum().backward()
        f(xe, temperature).square().sum().backward()
        assert_close(x.grad, xe.grad, torch.float32)


def test_compile_changing_temperature(device: str) -> None:
    """A temperature that changes at every call compiles as many graphs as ``torch.softmax(x /
    t)`` does: two where torch.compile traces it as a symbolic float from the second value on
    (``specialize_float`` off, the default since torch 2.6 or so), which the ops take as a 0-d
    CPU tensor (a float argument of an op would be specialised: a graph per value); one a value
    where torch specialises floats (torch 2.4). Forward, backward, out= and in place; a value
    the checks refuse still raises."""
    from torch._dynamo.utils import counters

    def f(x: torch.Tensor, out: torch.Tensor, t: float) -> tuple[torch.Tensor, ...]:
        y = ns.softmax(x, -1, temperature=t)
        ns.log_softmax(x.detach(), 0, out=out, temperature=t)
        z = ns.softmax_(x.detach() * 1, -1, temperature=t)
        return y, out, z

    temperatures = (0.7, 1.3, 0.4, 2.5, 1.0)
    x = torch.randn(6, 37, device=device, requires_grad=True)
    torch_compiled = torch.compile(lambda x, t: torch.softmax(x / t, -1), fullgraph=True,
                                   backend=compile_backend(device))
    counters.clear()
    for t in temperatures:
        torch_compiled(x, t)
    torch_graphs = counters["stats"]["unique_graphs"]
    assert torch_graphs in (2, len(temperatures))
    compiled = torch.compile(f, fullgraph=True, backend=compile_backend(device))
    counters.clear()
    dy = torch.randn(6, 37, device=device)
    for t in temperatures:
        y, out, z = compiled(x, torch.empty(6, 37, device=device), t)
        (dx,) = torch.autograd.grad(y, x, dy)
        xd = x.detach()
        assert_softmax_close(y, reference(xd, -1, temperature=t))
        assert_close(dx, reference_grad(torch.softmax, x, dy, -1, t), torch.float32)
        assert_close(out, reference(xd, 0, log=True, temperature=t), torch.float32)
        assert_softmax_close(z, reference(xd, -1, temperature=t))
    assert counters["stats"]["unique_graphs"] == torch_graphs
    # Under fullgraph=True torch.compile reports the check's ValueError as its own error
    # (torch 2.4: "Observed exception", without the message).
    with pytest.raises((ValueError, torch._dynamo.exc.Unsupported),
                       match="temperature must be a positive finite float|Observed exception"):
        compiled(x, torch.empty(6, 37, device=device), -1.0)


def test_opcheck_temperature_tensor(device: str) -> None:
    # The ops' overloads for a temperature torch.compile made symbolic (0-d float64 CPU).
    x = torch.randn(5, 37, device=device, requires_grad=True)
    t = torch.tensor(0.6, dtype=torch.float64)
    for op in (ops.softmax_t, ops.log_softmax_t):
        torch.library.opcheck(op, (x, 1, None, t, None))
        torch.library.opcheck(op, (x.detach().t(), 0, None, t, "online"))
    y = ops.softmax(x.detach(), 1, None, 1.0, None)
    for op in (ops.softmax_backward_t, ops.log_softmax_backward_t):
        torch.library.opcheck(op, (torch.randn_like(y), y, 1, torch.float32, t, None))
    for op in (ops.softmax_out_t, ops.log_softmax_out_t):
        torch.library.opcheck(op, (x.detach(), 1, t, None, torch.empty_like(y)))
    for op in (ops.softmax_t_, ops.log_softmax_t_):
        torch.library.opcheck(op, (x.detach().clone(), 0, t, "split"))


def test_compile_fullgraph_out_in_place_and_modules(kernel_device: str) -> None:
    """out= and in-place calls, and a module without a dim (torch's legacy rule), compile
    without a graph break."""
    def f(x: torch.Tensor, out: torch.Tensor) -> tuple[torch.Tensor, ...]:
        ns.log_softmax(x, 0, out=out, temperature=0.5)
        inplace = x.clone()
        ns.softmax_(inplace, -1)
        return out, inplace, ns.Softmax(dim=None)(x), ns.LogSoftmax(dim=None)(x[0])

    compiled = torch.compile(f, fullgraph=True, backend=compile_backend(kernel_device))
    x = torch.randn(7, 45, device=kernel_device)
    out, inplace, implicit, implicit_log = compiled(x, torch.full_like(x, float("nan")))
    assert_close(out, reference(x, 0, log=True, temperature=0.5), torch.float32)
    assert_softmax_close(inplace, reference(x, -1))
    assert_softmax_close(implicit, reference(x, 1))  # 2-d: dim 1
    assert_close(implicit_log, reference(x[0], 0, log=True), torch.float32)  # 1-d: dim 0


def test_compile_under_autocast(kernel_device: str) -> None:
    """Inside ``torch.autocast`` a compiled call returns the dtype an eager call returns (torch's
    own: float32 on CUDA), with no graph break."""
    fast_dtype = torch.bfloat16
    autocast = autocast_or_skip(kernel_device, fast_dtype)
    compiled = torch.compile(lambda t: ns.log_softmax(t, -1), fullgraph=True,
                             backend=compile_backend(kernel_device))
    x = torch.randn(6, 129, device=kernel_device, dtype=fast_dtype)
    with autocast:
        y, eager_y = compiled(x), ns.log_softmax(x, -1)
        assert y.dtype == eager_y.dtype == torch.log_softmax(x, -1).dtype
    assert_close(y, reference(x, -1, log=True, dtype=y.dtype), y.dtype)


class _Attention(torch.nn.Module):
    """One attention head: the score softmax is npu_softmax's module."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.softmax = ns.Softmax(dim=-1)
        self.scale = width ** -0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.softmax(q @ k.transpose(-2, -1) * self.scale) @ v


def test_compiled_attention_block(kernel_device: str) -> None:
    model = _Attention(24).to(kernel_device)
    x = torch.randn(2, 19, 24, device=kernel_device)
    compiled = torch.compile(model, fullgraph=True, backend=compile_backend(kernel_device))
    out = compiled(x)
    out.sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    # The same block with torch's softmax, in float64 on the CPU, as the reference.
    ref = _Attention(24).double()
    ref.load_state_dict(model.state_dict())
    ref.softmax = torch.nn.Softmax(dim=-1)
    expected = ref(x.cpu().double())
    expected.sum().backward()
    assert_close(out, expected, torch.float32, scale=10)
    for g, p in zip(grads, ref.parameters()):
        assert_close(g, p.grad, torch.float32, scale=50)


def test_cuda_graph_capture_and_replay(kernel_device: str) -> None:
    if kernel_device != "cuda":
        pytest.skip("CUDA graphs need a CUDA device")
    x = torch.randn(64, 1000, device="cuda")
    out = torch.empty_like(x)
    for _ in range(2):  # compile and size the grids outside the capture
        ns.softmax(x, out=out, temperature=0.9)
        ns.log_softmax(x)
        ns.softmax(x, variant="split")  # two launches, the second a dependent one on Hopper
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ns.softmax(x, out=out, temperature=0.9)
        logp = ns.log_softmax(x)
        split = ns.softmax(x, variant="split")
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    assert_softmax_close(out, reference(x, -1, temperature=0.9))
    assert_close(logp, reference(x, -1, log=True), torch.float32)
    assert_softmax_close(split, reference(x, -1))


def test_first_calls_inside_cuda_graph_capture(kernel_device: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing kept: each call plans, sizes its grid and keeps its launch during the capture.
    if kernel_device != "cuda":
        pytest.skip("CUDA graphs need a CUDA device")
    monkeypatch.setattr(launcher, "kernels", {})
    monkeypatch.setattr(eager, "_calls", {})
    rows = torch.randn(37, 1000, device="cuda", requires_grad=True)
    long = torch.randn(3, 70001, device="cuda", dtype=torch.bfloat16)
    cols = torch.randn(300, 50, device="cuda")
    dy = torch.randn_like(rows)
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph):
        y = ns.softmax(rows, -1, temperature=0.8)
        (dx,) = torch.autograd.grad(y, rows, dy)
        split = ns.log_softmax(long, -1, variant="split")
        over_cols = ns.softmax(cols, 0)
    for _ in range(2):  # fresh inputs each replay
        with torch.no_grad():
            rows.copy_(torch.randn_like(rows))
        long.copy_(torch.randn_like(long))
        cols.copy_(torch.randn_like(cols))
        graph.replay()
        torch.cuda.synchronize()
        assert_softmax_close(y, reference(rows, -1, temperature=0.8))
        assert_close(dx, reference_grad(torch.softmax, rows, dy, -1, 0.8), torch.float32)
        assert_close(split, reference(long, -1, log=True), torch.bfloat16)
        assert_softmax_close(over_cols, reference(cols, 0))


def test_compile_reduce_overhead_changing_temperature(kernel_device: str) -> None:
    """Under torch.compile's CUDA graphs a temperature that changes at every call (a graph
    input once torch.compile traces it as a symbolic float) scales each call by its own value:
    no replay keeps the value a capture saw."""
    if kernel_device != "cuda":
        pytest.skip("reduce-overhead captures CUDA graphs")

    def f(x: torch.Tensor, t: float) -> tuple[torch.Tensor, torch.Tensor]:
        return ns.softmax(x, -1, temperature=t), ns.log_softmax(x, 0, temperature=t)

    compiled = torch.compile(f, mode="reduce-overhead", fullgraph=True)
    for t in (0.7, 1.3, 0.4, 2.5, 0.9, 1.7, 0.6):
        x = torch.randn(300, 777, device="cuda")
        y, logp = (r.clone() for r in compiled(x, t))
        assert_softmax_close(y, reference(x, -1, temperature=t))
        assert_close(logp, reference(x, 0, log=True, temperature=t), torch.float32)


def test_compile_reduce_overhead(kernel_device: str) -> None:
    # torch.compile's CUDA graphs (mode="reduce-overhead") replay the kernels on new inputs.
    if kernel_device != "cuda":
        pytest.skip("reduce-overhead captures CUDA graphs")

    def f(x: torch.Tensor) -> torch.Tensor:
        return ns.softmax(x * 2, -1) + ns.log_softmax(x, 0).exp()

    compiled = torch.compile(f, mode="reduce-overhead", fullgraph=True)
    for _ in range(4):  # warm-up, recording, then replays
        x = torch.randn(300, 777, device="cuda")
        y = compiled(x).clone()
        xd = x.double()
        assert_close(y, torch.softmax(xd * 2, -1) + torch.log_softmax(xd, 0).exp(),
                     torch.float32)
