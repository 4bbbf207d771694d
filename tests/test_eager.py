"""Repeat eager calls: a kept launch per call signature (``npu_softmax.eager``) gives the same
results as a first call, on fresh data, and never hides an argument error or autograd."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from _ref import (
    assert_close,
    assert_softmax_close,
    autocast_or_skip,
    reference,
    reference_grad,
)

import npu_softmax
from npu_softmax import amp, checks, cuda_start, eager, launcher, ops
from npu_softmax.checks import supported_dtypes

VARIANTS = [None, "tile", "online", "split"]


@pytest.fixture
def fresh_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    """No kept calls at the start of the test; the ones it makes are dropped after it."""
    calls: dict = {}
    monkeypatch.setattr(eager, "_calls", calls)
    yield calls
    npu_softmax.disable()


def _no_planning(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a repeat call planned its launch again")

    monkeypatch.setattr(launcher, "launch_softmax", refuse)
    monkeypatch.setattr(launcher, "launch_softmax_backward", refuse)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("variant", VARIANTS)
def test_repeat_calls_reuse_the_launch(kernel_device: str, fresh_calls: dict, variant: str | None,
                                       log: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A repeat call plans nothing, is right on new data, and its launch writes every element
    of an output poisoned with NaN."""
    fn = npu_softmax.log_softmax if log else npu_softmax.softmax
    for dtype in supported_dtypes(torch.device(kernel_device)):
        fresh_calls.clear()
        shape = (9, 3001)  # more rows than the interpreter has programs
        x = torch.randn(shape, device=kernel_device).mul(4).to(dtype)
        assert_close(fn(x, -1, variant=variant), reference(x, -1, log), dtype)
        (call,) = fresh_calls.values()
        with monkeypatch.context() as m:
            _no_planning(m)
            for _ in range(2):
                x = torch.randn(shape, device=kernel_device).mul(4).to(dtype)
                assert_close(fn(x, -1, variant=variant), reference(x, -1, log), dtype)
            poisoned = torch.full(shape, float("nan"), dtype=dtype, device=kernel_device)
            call.launch(x, poisoned)
            assert_close(poisoned, reference(x, -1, log), dtype)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("variant", VARIANTS)
def test_repeat_out_and_in_place_calls_reuse_the_launch(kernel_device: str, fresh_calls: dict,
                                                        variant: str | None, log: bool,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """out= and in-place calls keep their launch too: a repeat plans nothing, writes every
    element of an out= poisoned with NaN, and is right on new data; ``softmax(x, out=x)``
    repeats the launch of ``softmax_(x)``."""
    fn = npu_softmax.log_softmax if log else npu_softmax.softmax
    fn_ = npu_softmax.log_softmax_ if log else npu_softmax.softmax_
    shape = (9, 3001)
    x = torch.randn(shape, device=kernel_device)
    fn(x, -1, variant=variant, out=torch.empty_like(x))
    fn_(x.clone(), -1, variant=variant, temperature=0.5)
    assert len(fresh_calls) == 2
    with monkeypatch.context() as m:
        _no_planning(m)
        for _ in range(2):
            x = torch.randn(shape, device=kernel_device) * 4
            out = torch.full_like(x, float("nan"))
            assert fn(x, -1, variant=variant, out=out) is out
            assert_close(out, reference(x, -1, log), torch.float32)
            y = x.clone()
            assert fn_(y, -1, variant=variant, temperature=0.5) is y
            assert_close(y, reference(x, -1, log, 0.5), torch.float32)
            y = x.clone()
            fn(y, -1, variant=variant, temperature=0.5, out=y)
            assert_close(y, reference(x, -1, log, 0.5), torch.float32)
    assert len(fresh_calls) == 2


def test_repeat_out_calls_still_check_arguments(device: str, fresh_calls: dict) -> None:
    """A kept out= or in-place signature never repeats on a call its first call would treat
    otherwise: an out= that overlaps the input partially (the same strides, one storage: its
    result goes through a buffer), one that requires grad, an input that requires grad in
    place, another dtype of out."""
    buf = torch.randn(4 * 640, device=device)
    x, apart, overlapping = buf[:640].view(10, 64), buf[640:1280].view(10, 64), \
        buf[32:672].view(10, 64)
    npu_softmax.softmax(x, -1, out=apart)
    assert_softmax_close(apart, reference(x, -1))
    expected = reference(x, -1)
    npu_softmax.softmax(x, -1, out=overlapping)
    assert_softmax_close(overlapping, expected)
    out = torch.empty(10, 64, device=device)
    npu_softmax.softmax(x, -1, out=out)
    with pytest.raises(RuntimeError, match="autograd"):
        npu_softmax.softmax(x, -1, out=out.clone().requires_grad_())
    with pytest.raises(TypeError, match="dtype"):
        npu_softmax.softmax(x, -1, out=out.half())
    y = x.clone()
    npu_softmax.softmax_(y, 0)
    with pytest.raises(RuntimeError, match="autograd"):
        npu_softmax.softmax_(y.clone().requires_grad_(), 0)
    with pytest.raises(TypeError, match="dim must be an int"):
        npu_softmax.softmax_(y, False)


def test_op_bodies_keep_their_launch(kernel_device: str, fresh_calls: dict,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The custom ops' bodies (what a compiled graph calls) keep their launches per signature:
    their repeat calls plan nothing and are right on new data."""
    x = torch.randn(7, 500, device=kernel_device)
    ops.softmax(x, 1, None, 0.5, None)
    ops.log_softmax_out(x, 0, 1.0, None, torch.empty_like(x))
    ops.softmax_(x.clone(), 1, 2.0, None)
    with monkeypatch.context() as m:
        _no_planning(m)
        x = torch.randn(7, 500, device=kernel_device)
        assert_softmax_close(ops.softmax(x, 1, None, 0.5, None), reference(x, 1, temperature=0.5))
        out = torch.full_like(x, float("nan"))
        ops.log_softmax_out(x, 0, 1.0, None, out)
        assert_close(out, reference(x, 0, log=True), torch.float32)
        y = x.clone()
        ops.softmax_(y, 1, 2.0, None)
        assert_softmax_close(y, reference(x, 1, temperature=2.0))


def test_op_launches_never_serve_public_calls(device: str, fresh_calls: dict) -> None:
    """An op trusts its caller's checks: what it keeps from arguments the public functions
    refuse (an out= wider than the result's dtype) leaves those refused."""
    x = torch.randn(3, 40, device=device).half()
    wide = torch.empty(3, 40, device=device)
    ops.softmax_out(x, 1, 1.0, None, wide)
    ops.softmax_out(x, 1, 1.0, None, wide)
    for _ in range(2):
        with pytest.raises(TypeError, match="out has dtype"):
            npu_softmax.softmax(x, 1, temperature=1.0, out=wide)


@pytest.mark.parametrize("variant", VARIANTS)
def test_repeat_calls_on_misaligned_views(kernel_device: str, fresh_calls: dict,
                                          variant: str | None) -> None:
    """Views with one signature whose data starts 16-byte aligned or not, in either order
    (a GPU starts the aligned binary directly; a misaligned view must not get it)."""
    base = torch.randn(48, 2100, device=kernel_device).mul(3).to(torch.float16)
    aligned, shifted = base[:, :2048], base[:, 3:2051]
    assert aligned.shape == shifted.shape and aligned.stride() == shifted.stride()
    for x in (shifted, aligned, shifted, aligned, shifted):
        assert_softmax_close(npu_softmax.softmax(x, -1, variant=variant), reference(x, -1))
    assert len(fresh_calls) == 1


def test_signature_tells_calls_apart(device: str, fresh_calls: dict) -> None:
    """Shapes, strides, dims, dtypes and temperatures each get their own launch: ``x`` in
    another memory order (the same shape, other strides) and ``x.half()`` too, whose results
    the interpreter would compute right from ``x``'s launch (it reads the tensors it is given),
    where a GPU would start the binary of ``x``'s kept launch on them."""
    x = torch.randn(6, 10, 12, device=device)
    cases = [(x, -1, {}), (x, 1, {}), (x, 0, {}), (x.transpose(1, 2), -1, {}),
             (x.transpose(0, 2).contiguous().transpose(0, 2), -1, {}),
             (x[:, :, :7], -1, {}), (x, -1, {"temperature": 0.5}),
             (x, -1, {"dtype": torch.float16}), (x.half(), -1, {})]
    for _ in range(2):
        for t, dim, kwargs in cases:
            y = npu_softmax.softmax(t, dim, **kwargs)
            expected = reference(t, dim, temperature=kwargs.get("temperature", 1.0),
                                 dtype=kwargs.get("dtype"))
            assert y.dtype == kwargs.get("dtype", t.dtype)
            assert_softmax_close(y, expected)
    # Every signature kept apart, but the one whose call casts its input (dtype=float16),
    # which is never kept; nothing is kept where CPU tensors take torch's softmax.
    assert len(fresh_calls) == (len(cases) - 1 if launcher.serves(x.device) else 0)


def test_backward_signature_tells_calls_apart(device: str, fresh_calls: dict) -> None:
    """Gradients of one shape over other dims, at other temperatures and of log_softmax each
    get their own backward launch: a kept one would scale by another temperature."""
    x = torch.randn(6, 10, 12, device=device)
    dy = torch.randn(6, 10, 12, device=device)
    cases = [(npu_softmax.softmax, torch.softmax, -1, 1.0),
             (npu_softmax.softmax, torch.softmax, -1, 0.5),
             (npu_softmax.softmax, torch.softmax, 1, 0.5),
             (npu_softmax.log_softmax, torch.log_softmax, -1, 0.5),
             (npu_softmax.log_softmax, torch.log_softmax, -1, 2.0)]
    for _ in range(2):
        for fn, torch_fn, dim, t in cases:
            xg = x.clone().requires_grad_()
            (dx,) = torch.autograd.grad(fn(xg, dim, temperature=t), xg, dy)
            assert_close(dx, reference_grad(torch_fn, x, dy, dim, t), torch.float32)


def test_repeat_calls_still_check_arguments(device: str, fresh_calls: dict) -> None:
    """A kept signature never lets through an argument its first call would refuse."""
    x = torch.randn(4, 8, device=device)
    npu_softmax.softmax(x, 1)
    npu_softmax.softmax(x, 1, temperature=2.0)
    with pytest.raises(TypeError, match="dim must be an int"):
        npu_softmax.softmax(x, True)
    with pytest.raises(TypeError, match="temperature"):
        npu_softmax.softmax(x, 1, temperature=True)
    with pytest.raises(TypeError, match="dim must be an int"):
        npu_softmax.softmax(x, [1])
    with pytest.raises(TypeError, match="temperature"):
        npu_softmax.softmax(x, 1, temperature=[2.0])
    with pytest.raises(IndexError):
        npu_softmax.softmax(x, 2)


@pytest.mark.parametrize("log", [False, True])
def test_repeat_calls_under_autocast_take_its_dtype(device: str, fresh_calls: dict, log: bool,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A signature kept outside ``torch.autocast`` is not repeated inside it, where the output
    dtype is autocast's. CPU autocast leaves softmax alone; CUDA's makes float16 in float32
    out, which ``amp``'s answer for this device type is set to here."""
    ctx = autocast_or_skip(device, torch.bfloat16)
    fn = npu_softmax.log_softmax if log else npu_softmax.softmax
    monkeypatch.setitem(amp._dtypes, (device, torch.float16, torch.bfloat16, log),
                        torch.float32)
    x = torch.randn(5, 40, device=device).half()
    assert fn(x, -1).dtype == torch.float16
    with ctx:
        y = fn(x, -1)
    assert y.dtype == torch.float32
    assert_close(y, reference(x, -1, log, dtype=torch.float32), torch.float32)


def test_autograd_after_a_kept_call(device: str, fresh_calls: dict) -> None:
    """A signature kept from a no-grad call still records autograd for an input that needs it,
    and no-grad calls on such an input use the kept launch."""
    x = torch.randn(9, 300, device=device)
    npu_softmax.softmax(x, -1)
    xg = x.clone().requires_grad_()
    y = npu_softmax.softmax(xg, -1)
    assert y.grad_fn is not None
    dy = torch.randn_like(y)
    y.backward(dy)
    assert_close(xg.grad, reference_grad(torch.softmax, x, dy, -1), torch.float32)
    with torch.no_grad():
        y = npu_softmax.softmax(xg, -1)
    assert y.grad_fn is None
    assert_softmax_close(y, reference(x, -1))


def test_calls_under_inference_mode(device: str, fresh_calls: dict) -> None:
    """Inside ``torch.inference_mode`` first and kept calls, out= and in place give torch's
    results, and a signature kept there serves normal calls after it (and the reverse)."""
    x = torch.randn(7, 301, device=device)
    with torch.inference_mode():
        for _ in range(2):
            assert_softmax_close(npu_softmax.softmax(x, -1), reference(x, -1))
        out = torch.full_like(x, float("nan"))
        npu_softmax.log_softmax(x, 0, out=out)
        assert_close(out, reference(x, 0, log=True), torch.float32)
        inplace = x.clone()
        npu_softmax.softmax_(inplace, 1)
        assert_softmax_close(inplace, reference(x, 1))
        assert_close(npu_softmax.log_softmax(x, 1), reference(x, 1, log=True), torch.float32)
    fresh = torch.randn(7, 301, device=device)
    assert_softmax_close(npu_softmax.softmax(fresh, -1), reference(fresh, -1))
    npu_softmax.log_softmax(fresh, 1)  # kept outside, repeated inside
    with torch.inference_mode():
        assert_close(npu_softmax.log_softmax(fresh, 1), reference(fresh, 1, log=True),
                     torch.float32)


def test_kept_calls_are_bounded(device: str, fresh_calls: dict,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eager, "MAX_SIGNATURES", 3)
    for _ in range(2):
        for n in range(1, 8):
            x = torch.randn(n, 5 * n, device=device)
            assert_softmax_close(npu_softmax.softmax(x, -1), reference(x, -1))
            assert len(fresh_calls) <= 3


@pytest.mark.parametrize("log", [False, True])
def test_enabled_torch_softmax_repeats(kernel_device: str, fresh_calls: dict, log: bool,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``enable()``'s aten kernels keep their launches too."""
    fn = torch.log_softmax if log else torch.softmax
    npu_softmax.enable()
    x = torch.randn(33, 517, device=kernel_device)
    assert_close(fn(x, -1), reference(x, -1, log), torch.float32)
    with monkeypatch.context() as m:
        _no_planning(m)
        x = torch.randn(33, 517, device=kernel_device)
        assert_close(fn(x, -1), reference(x, -1, log), torch.float32)


def test_launch_hooks_see_repeat_calls(kernel_device: str, fresh_calls: dict) -> None:
    """With a Triton launch hook set (a profiler), repeat calls launch through Triton, so the
    hook sees every one."""
    import triton

    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if kernel_device != "cuda" or runtime is None:
        pytest.skip("direct launches exist only on CUDA with upstream Triton 3.4+")
    seen: list[object] = []

    def hook(metadata: object) -> None:
        seen.append(metadata)

    chain = runtime.launch_enter_hook
    x = torch.randn(8, 100, device=kernel_device)
    npu_softmax.softmax(x, -1)
    if hasattr(chain, "add"):
        chain.add(hook)
    else:
        runtime.launch_enter_hook = hook
    try:
        for _ in range(3):
            assert_softmax_close(npu_softmax.softmax(x, -1), reference(x, -1))
    finally:
        if hasattr(chain, "add"):
            chain.remove(hook)
        else:
            runtime.launch_enter_hook = chain
    assert len(seen) == 3


@pytest.mark.parametrize("c_start", [True, False])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("variant", VARIANTS)
def test_kept_launch_starts_directly(kernel_device: str, fresh_calls: dict, variant: str | None,
                                     log: bool, c_start: bool,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """On CUDA with upstream Triton 3.4+, every kernel of a kept launch is started directly
    (``direct_launch.direct_launcher``, never through Triton's launch path again; with 3.5-3.9 not
    through its Python launcher either), through ``cuda_start``'s C starter or, where that
    cannot be built (``c_start`` False), Triton's C launch; those starts alone write every
    element of an output poisoned with NaN."""
    import triton

    if kernel_device != "cuda" or getattr(getattr(triton, "knobs", None), "runtime", None) is None:
        pytest.skip("direct launches exist only on CUDA with upstream Triton 3.4+")
    starters: list = []
    if c_start:
        starter = cuda_start.starter
        monkeypatch.setattr(cuda_start, "starter",
                            lambda *args: starters.append(starter(*args)) or starters[-1])
    else:
        monkeypatch.setattr(cuda_start, "module", lambda: None)
    fn = npu_softmax.log_softmax if log else npu_softmax.softmax
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(37, 3001, device=kernel_device).mul(4).to(dtype)
        fn(x, -1, variant=variant)
        launch = fresh_calls[eager.forward_signature(x, -1, None, None, variant, log)].launch
        assert all(step.start is not None for step in launch.steps)
        assert len(starters) == (len(launch.steps) if c_start else 0)
        assert all(s is not None for s in starters)
        starters.clear()
        with monkeypatch.context() as m:
            def refuse(*args: object, **kwargs: object) -> None:
                raise AssertionError("a kept launch went through Triton's launch path")

            m.setattr(launcher, "_launch", refuse)
            if triton.__version__.split(".")[:2] in [["3", str(v)] for v in range(5, 10)]:
                # There the start calls the C launch itself, not Triton's Python launcher.
                m.setattr(triton.runtime.driver.active.launcher_cls, "__call__", refuse)
            x = torch.randn(37, 3001, device=kernel_device).mul(4).to(dtype)
            poisoned = torch.full_like(x, float("nan"))
            launch(x, poisoned)
            assert_close(poisoned, reference(x, -1, log), dtype)


def test_eager_autograd_matches_the_op(device: str, fresh_calls: dict) -> None:
    """The eager autograd path (no op dispatch) gives the custom op's gradient; with
    create_graph=True its gradient can be differentiated again (as torch.softmax's can)."""
    x = torch.randn(5, 70, device=device, requires_grad=True)
    dy = torch.randn(5, 70, device=device)
    (dx,) = torch.autograd.grad(npu_softmax.softmax(x, -1), x, dy)
    (by_op,) = torch.autograd.grad(torch.ops.npu_softmax.softmax(x, 1, None, 1.0, None), x, dy)
    assert_close(dx, by_op, torch.float32)
    (dx,) = torch.autograd.grad(npu_softmax.softmax(x, -1), x, dy, create_graph=True)
    (ddx,) = torch.autograd.grad(dx.pow(2).sum(), x)
    x64 = x.detach().cpu().double().requires_grad_()
    (dx64,) = torch.autograd.grad(torch.softmax(x64, -1), x64, dy.cpu().double(),
                                  create_graph=True)
    (ddx64,) = torch.autograd.grad(dx64.pow(2).sum(), x64)
    assert_close(ddx, ddx64, torch.float32, scale=4)


@pytest.mark.parametrize("first_records", [True, False])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("variant", VARIANTS)
def test_repeat_calls_that_autograd_records_skip_the_checks(
        device: str, fresh_calls: dict, variant: str | None, log: bool, first_records: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A repeat of a signature (first seen with or without autograd) whose call autograd
    records checks and plans nothing, and gives the output and gradient of a checked call,
    with a temperature and an output dtype; with grad off, or an input that does not require
    grad, it is an ordinary repeat."""
    if not launcher.serves(torch.device(device)):
        variant = None
    fn, torch_fn = ((npu_softmax.log_softmax, torch.log_softmax) if log
                    else (npu_softmax.softmax, torch.softmax))
    shape = (13, 2001)

    def call(x: torch.Tensor) -> torch.Tensor:
        return fn(x, 1, dtype=torch.float32, temperature=2.5, variant=variant)

    x = torch.randn(shape, device=device, dtype=torch.bfloat16).mul(3)
    call(x.clone().requires_grad_(first_records))
    kept = launcher.serves(torch.device(device))  # not the CPU's torch fallback
    assert len(fresh_calls) == kept
    with monkeypatch.context() as m:
        if kept:
            def refuse(*args: object, **kwargs: object) -> None:
                raise AssertionError("a repeat call was checked or planned again")

            # (The backward's first call of its signature plans, in the loop.)
            m.setattr(checks, "check_args", refuse)
            m.setattr(launcher, "launch_softmax", refuse)
        x = torch.randn(shape, device=device, dtype=torch.bfloat16).mul(3).requires_grad_()
        dy = torch.randn(shape, device=device)
        y = call(x)
        assert y.dtype == torch.float32 and y.requires_grad
        assert_close(y, reference(x, 1, log, temperature=2.5), torch.float32)
        (dx,) = torch.autograd.grad(y, x, dy)
        expected = reference_grad(torch_fn, x.float(), dy, 1, temperature=2.5)
        assert dx.dtype == torch.bfloat16
        assert_close(dx.float(), expected, torch.bfloat16)
        with torch.no_grad():
            assert not call(x).requires_grad
        assert not call(x.detach()).requires_grad


@pytest.mark.parametrize("variant", VARIANTS)
def test_repeat_backward_reuses_the_launch(device: str, fresh_calls: dict, variant: str | None,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Backward calls keep their launch per signature too: a repeat plans nothing and is right
    on new data."""
    if not launcher.serves(torch.device(device)):
        variant = None

    def grad_of(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
        x = x.clone().requires_grad_()
        (dx,) = torch.autograd.grad(npu_softmax.softmax(x, -1, variant=variant), x, dy)
        assert_close(dx, reference_grad(torch.softmax, x, dy, -1), torch.float32)
        return dx

    shape = (23, 3001)
    grad_of(torch.randn(shape, device=device), torch.randn(shape, device=device))
    with monkeypatch.context() as m:
        _no_planning(m)
        for _ in range(2):
            grad_of(torch.randn(shape, device=device), torch.randn(shape, device=device))


@pytest.mark.parametrize("log", [False, True])
def test_repeat_backward_op_on_a_non_contiguous_output(device: str, fresh_calls: dict,
                                                       log: bool) -> None:
    """The backward op called directly (as scripted code may) with an output that is not
    contiguous runs on a contiguous copy of it: a repeat of that signature must not start the
    launch kept for the copy's strides on the output as given."""
    op = ops.log_softmax_backward if log else ops.softmax_backward
    torch_fn = torch.log_softmax if log else torch.softmax
    for _ in range(3):
        x = torch.randn(40, 33, device=device)
        y = (torch.log_softmax if log else torch.softmax)(x.t(), -1)  # (33, 40)
        output = y.t().contiguous().t()  # y's values, column-major
        dy = torch.randn(33, 40, device=device)
        dx = op(dy, output, -1, torch.float32)
        assert_close(dx, reference_grad(torch_fn, x.t(), dy, -1), torch.float32)
