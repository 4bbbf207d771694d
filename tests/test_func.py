"""``torch.func`` transforms over the public functions, on every device that runs the kernels:
``vmap`` runs the kernels once on the whole batch (out= and in place too), and ``grad``,
``vjp``, ``jacrev``, ``jacfwd``, ``jvp``, ``hessian`` and their compositions match torch's own
transforms of ``torch.softmax`` in float64."""

from __future__ import annotations

import pytest
import torch
from _ref import DTYPES, assert_close, assert_softmax_close, reference, reference_grad

import npu_softmax as ns
from npu_softmax import batching, eager, launcher, ops
from npu_softmax.checks import supported_dtypes

FUNCS = {"softmax": (ns.softmax, torch.softmax), "log_softmax": (ns.log_softmax, torch.log_softmax)}
INPLACE = {"softmax": ns.softmax_, "log_softmax": ns.log_softmax_}


def _check(y: torch.Tensor, ref: torch.Tensor, log: bool) -> None:
    if log:
        assert_close(y, ref, y.dtype)
    else:
        assert_softmax_close(y, ref)


@pytest.fixture(params=["direct", "rule"], autouse=True)
def vmap_route(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test twice: with a vmap batch unwrapped directly (``batching``), and through the
    ``torch.autograd.Function`` rule, the way a torch without functorch's primitives goes."""
    if request.param == "rule":
        monkeypatch.setattr(batching, "available", False)
    return request.param


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """The shapes of the inputs the forward kernels are planned and launched for, as the test
    goes, from an empty cache of kept launches (a repeat of a kept one is not listed)."""
    monkeypatch.setattr(eager, "_calls", {})
    shapes: list[tuple[int, ...]] = []
    launch = launcher.launch_softmax

    def spy(x: torch.Tensor, *args: object, **kwargs: object) -> object:
        shapes.append(tuple(x.shape))
        return launch(x, *args, **kwargs)

    monkeypatch.setattr(launcher, "launch_softmax", spy)
    return shapes


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("in_dim,dim", [(0, -1), (1, 0), (2, 1)])
def test_vmap_runs_the_batch_at_once(kernel_device: str, launches: list, vmap_route: str,
                                     monkeypatch: pytest.MonkeyPatch, name: str, in_dim: int,
                                     dim: int) -> None:
    rule_calls = []
    rule = ops._TransformAutograd.vmap
    monkeypatch.setattr(ops._TransformAutograd, "vmap",
                        staticmethod(lambda *a: rule_calls.append(1) or rule(*a)))
    fn, _ = FUNCS[name]
    log = name == "log_softmax"
    batch_dim = dim + 1 if dim >= 0 else dim  # the sample's dim in the batch, batch first
    for dtype in [d for d in DTYPES if d in supported_dtypes(torch.device(kernel_device))]:
        launches.clear()
        for _ in range(2):  # the second call repeats the first one's kept launch
            x = (torch.randn(5, 37, 23, device=kernel_device) * 4).to(dtype)
            batch = x.movedim(in_dim, 0)
            y = torch.vmap(lambda s: fn(s, dim), in_dims=in_dim)(x)  # noqa: B023
            assert launches == [tuple(batch.shape)], "one launch on the whole batch"
            assert y.dtype == dtype and y.shape == batch.shape
            _check(y, reference(batch, batch_dim, log), log)
        y = torch.vmap(lambda s: fn(s, dim, temperature=0.7), in_dims=in_dim)(x)  # noqa: B023
        assert set(launches) == {tuple(batch.shape)}
        _check(y, reference(batch, batch_dim, log, temperature=0.7), log)
        if dtype != torch.float32:  # dtype=: cast first, as torch does
            y = torch.vmap(lambda s: fn(s, dim, dtype=torch.float32), in_dims=in_dim)(x)  # noqa: B023
            assert y.dtype == torch.float32
            _check(y, reference(batch, batch_dim, log, dtype=torch.float32), log)
    assert bool(rule_calls) == (vmap_route == "rule")


@pytest.mark.parametrize("name", FUNCS)
def test_vmap_out_inplace_nested_and_scalar_samples(kernel_device: str, name: str) -> None:
    fn, _ = FUNCS[name]
    log = name == "log_softmax"
    x = torch.randn(6, 3, 41, device=kernel_device) * 4
    ref = reference(x, -1, log)
    out = torch.full_like(x, float("nan"))
    torch.vmap(lambda s, o: fn(s, -1, out=o))(x, out)
    _check(out, ref, log)
    inplace = x.clone()
    torch.vmap(lambda s: INPLACE[name](s, -1))(inplace)
    _check(inplace, ref, log)
    # Two levels of vmap: samples of one dim.
    _check(torch.vmap(torch.vmap(lambda s: fn(s, 0)))(x), ref, log)
    # Samples of no dims: each its own row of one element (probability 1, log 0).
    _check(torch.vmap(lambda s: fn(s, 0))(x[0, 0]), reference(x[0, 0, :, None], 1, log)[:, 0],
           log)
    # A tensor batched at an outer level only, called inside an inner vmap.
    w = torch.randn(5, 41, device=kernel_device)
    y = torch.vmap(lambda a: torch.vmap(lambda b: fn(a, -1) * b)(w))(x[:, 0])
    _check(y, reference(x[:, 0], -1, log)[:, None] * w.cpu().double(), log)
    with pytest.raises(IndexError):
        torch.vmap(lambda s: fn(s, 2))(x)  # the sample has 2 dims


@pytest.mark.parametrize("name", FUNCS)
def test_vmap_under_autograd(kernel_device: str, name: str) -> None:
    """Autograd outside the transform records the batch's call: its gradient is the kernels'."""
    fn, torch_fn = FUNCS[name]
    x = (torch.randn(7, 5, 29, device=kernel_device) * 3).requires_grad_()
    w = torch.randn(7, 5, 29, device=kernel_device)
    (torch.vmap(lambda s: fn(s, 0), in_dims=2, out_dims=2)(x) * w).sum().backward()
    assert_close(x.grad, reference_grad(torch_fn, x, w, 0), torch.float32, scale=4)


@pytest.mark.parametrize("name", FUNCS)
def test_derivative_transforms_match_float64(kernel_device: str, name: str) -> None:
    fn, torch_fn = FUNCS[name]
    x = torch.randn(4, 19, device=kernel_device) * 3
    w = torch.randn(4, 19, device=kernel_device)
    x64, w64 = x.cpu().double(), w.cpu().double()

    def ours(t: torch.Tensor, v: torch.Tensor = w) -> torch.Tensor:
        return (fn(t, -1, temperature=0.7) * v).sum()

    def theirs(t: torch.Tensor, v: torch.Tensor = w64) -> torch.Tensor:
        return (torch_fn(t / 0.7, -1) * v).sum()

    def row(t: torch.Tensor) -> torch.Tensor:
        return fn(t, -1, temperature=0.7)

    def row64(t: torch.Tensor) -> torch.Tensor:
        return torch_fn(t / 0.7, -1)

    func = torch.func
    pairs = {
        "grad": (func.grad(ours)(x), func.grad(theirs)(x64)),
        "jacrev": (func.jacrev(row)(x[0]), func.jacrev(row64)(x64[0])),
        "jacfwd": (func.jacfwd(row)(x[0]), func.jacfwd(row64)(x64[0])),
        "vjp": (func.vjp(row, x)[1](w)[0], func.vjp(row64, x64)[1](w64)[0]),
        "jvp": (func.jvp(row, (x,), (w,))[1], func.jvp(row64, (x64,), (w64,))[1]),
        "hessian": (func.hessian(ours)(x[:1], w[:1]), func.hessian(theirs)(x64[:1], w64[:1])),
        "vmap(grad)": (torch.vmap(func.grad(ours))(x, w), torch.vmap(func.grad(theirs))(x64, w64)),
        "grad(vmap)": (func.grad(lambda t: (torch.vmap(row)(t) * w).sum())(x),
                       func.grad(lambda t: (torch.vmap(row64)(t) * w64).sum())(x64)),
    }
    for transform, (got, want) in pairs.items():
        assert got.dtype == torch.float32, transform
        # Float32 derivatives of float32 results: a few roundings each.
        assert_close(got, want, torch.float32, scale=4)


@pytest.mark.parametrize("name", FUNCS)
def test_batched_gradients(kernel_device: str, name: str) -> None:
    """Autograd's own batched backward (``is_grads_batched=True``, what
    ``jacobian(vectorize=True)`` and ``gradcheck(check_batched_grad=True)`` run) hands the
    gradient a batch without storage: it gets torch ops' gradient, as torch's function does;
    also where an eager call has kept the backward's launch."""
    fn, torch_fn = FUNCS[name]
    x = (torch.randn(6, 23, device=kernel_device) * 3).requires_grad_()
    vs = torch.randn(4, 6, 23, device=kernel_device)
    for _ in range(2):
        fn(x, 1, temperature=0.7).backward(vs[0])  # a backward signature kept
        (got,) = torch.autograd.grad(fn(x, 1, temperature=0.7), x, vs, is_grads_batched=True)
        for g, v in zip(got, vs):
            assert_close(g, reference_grad(torch_fn, x, v, 1, 0.7), torch.float32, scale=4)
    row = x.detach()[0]
    jacobian = torch.autograd.functional.jacobian(lambda t: fn(t, 0), row, vectorize=True)
    want = torch.autograd.functional.jacobian(lambda t: torch_fn(t, 0), row.cpu().double())
    assert_close(jacobian, want, torch.float32, scale=4)
    if torch.float64 in supported_dtypes(torch.device(kernel_device)):
        x64 = torch.randn(3, 7, device=kernel_device, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(lambda t: fn(t, 1, temperature=0.7), (x64,),
                                        check_batched_grad=True)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_forward_mode_ad(kernel_device: str, name: str, requires_grad: bool) -> None:
    """``torch.autograd.forward_ad``'s dual tensors get the tangent torch's function gives (in
    float64), whether the input requires grad or not, on a first and a repeated call; an
    out= call on one is refused, as out= calls under autograd are."""
    import torch.autograd.forward_ad as fwad

    fn, torch_fn = FUNCS[name]
    x = (torch.randn(4, 19, device=kernel_device) * 3).requires_grad_(requires_grad)
    t = torch.randn(4, 19, device=kernel_device)
    with fwad.dual_level():
        want = fwad.unpack_dual(torch_fn(fwad.make_dual(x.detach().cpu().double(),
                                                        t.cpu().double()) / 0.7, -1)).tangent
        for _ in range(2):
            y = fn(fwad.make_dual(x, t), -1, temperature=0.7)
            tangent = fwad.unpack_dual(y).tangent
            assert tangent is not None
            assert_close(tangent, want, torch.float32, scale=4)
        with pytest.raises(RuntimeError, match="do not support autograd"):
            fn(x.detach(), -1, out=fwad.make_dual(torch.empty_like(t), t))
    jac = torch.autograd.functional.jacobian(lambda a: fn(a, -1), x[0].detach(), vectorize=True,
                                             strategy="forward-mode")
    assert_close(jac, torch.autograd.functional.jacobian(lambda a: torch_fn(a, -1),
                                                         x[0].detach().cpu().double()),
                 torch.float32, scale=4)


@pytest.mark.parametrize("name", FUNCS)
def test_functionalize(device: str, name: str) -> None:
    """``torch.func.functionalize`` (which has no rule for a ``torch.autograd.Function``: it
    raised ``NYI: Functionalize rule for custom_function_call``) gives torch's results for the
    forward, out= and in place, alone and with ``vmap``, ``grad`` and ``jvp`` around it or
    ``vmap`` inside it."""
    fn, torch_fn = FUNCS[name]
    log = name == "log_softmax"
    func = torch.func
    x = torch.randn(5, 19, device=device) * 3

    def into(t: torch.Tensor) -> torch.Tensor:
        out = torch.full_like(t, float("nan"))
        fn(t, 0, out=out)
        return out

    def inplace(t: torch.Tensor) -> torch.Tensor:
        t = t.clone()
        INPLACE[name](t, -1, temperature=0.7)
        return t

    _check(func.functionalize(lambda t: fn(t, 1))(x), reference(x, 1, log), log)
    _check(func.functionalize(into)(x), reference(x, 0, log), log)
    _check(func.functionalize(inplace)(x), reference(x, 1, log, 0.7), log)
    _check(func.functionalize(torch.vmap(inplace))(x), reference(x, 1, log, 0.7), log)
    _check(torch.vmap(func.functionalize(inplace))(x), reference(x, 1, log, 0.7), log)
    w = torch.randn(19, device=device)
    row = func.functionalize(lambda t: fn(t, 0, temperature=0.7))
    assert_close(func.grad(lambda t: (row(t) * w).sum())(x[0]),
                 reference_grad(torch_fn, x[0], w, 0, 0.7), torch.float32, scale=4)
    want = func.jvp(lambda t: torch_fn(t / 0.7, 0), (x[0].cpu().double(),),
                    (w.cpu().double(),))[1]
    assert_close(func.jvp(row, (x[0],), (w,))[1], want, torch.float32, scale=4)


def test_routed_torch_softmax_under_transforms(kernel_device: str, launches: list) -> None:
    """With ``enable()``, torch's own batching and derivative rules call the routed kernels."""
    x = torch.randn(6, 3, 41, device=kernel_device) * 4
    w = torch.randn(6, 3, 41, device=kernel_device)
    with ns.enabled():
        y = torch.vmap(lambda s: torch.softmax(s, -1), in_dims=1)(x)
        assert launches == [(3, 6, 41)], "one launch on the whole batch"
        g = torch.func.grad(lambda t: (torch.log_softmax(t, -1) * w).sum())(x)
    assert_softmax_close(y, reference(x.movedim(1, 0), -1))
    assert_close(g, reference_grad(torch.log_softmax, x, w, -1), torch.float32, scale=4)
