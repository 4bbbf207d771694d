"""Gradients through the Triton backward kernels: gradcheck in float64, and against float64
references in the low-precision dtypes, for every variant and stride pattern of ``dy``."""

from __future__ import annotations

import pytest
import torch
import torch.utils.checkpoint  # not an attribute of torch.utils until imported (torch 2.4)
from _ref import DTYPES, VARIANTS, assert_close, reference_grad

import npu_softmax as ns
from npu_softmax import launcher, ops

FUNCS = {"softmax": (ns.softmax, torch.softmax), "log_softmax": (ns.log_softmax, torch.log_softmax)}


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("temperature", [None, 0.6])
def test_gradcheck(kernel_device: str, name: str, variant: str | None,
                   temperature: float | None) -> None:
    if launcher.target().backend == "npu":
        pytest.skip("no float64 on Ascend")
    fn, _ = FUNCS[name]
    # Small: gradcheck runs the kernels twice per element (interpreted: seconds per element).
    x = torch.randn(3, 9, dtype=torch.float64, device=kernel_device, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda t: fn(t, 1, temperature=temperature, variant=variant), (x,))
    x0 = torch.randn(7, 2, dtype=torch.float64, device=kernel_device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: fn(t, 0, variant=variant), (x0,))


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(37, 781), (2, 2053)])  # 2053: several backward chunks
def test_grad_matches_float64(device: str, name: str, variant: str | None, dtype: torch.dtype,
                              shape: tuple) -> None:
    if dtype == torch.float64 and device == "npu":
        pytest.skip("no float64 on Ascend")
    fn, torch_fn = FUNCS[name]
    x = torch.randn(shape, device=device).to(dtype).requires_grad_()
    y = fn(x, -1, temperature=1.7, variant=variant)
    dy = torch.randn(shape, device=device).to(dtype)
    y.backward(dy)
    assert x.grad.dtype == dtype
    # The low-precision gradient is rounded from y, dy and dx: three roundings.
    assert_close(x.grad, reference_grad(torch_fn, x, dy, -1, 1.7), dtype, scale=3)


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_grad_strides(device: str, name: str, variant: str | None) -> None:
    fn, torch_fn = FUNCS[name]
    base = torch.randn(9, 50, 7, device=device)
    x = base.transpose(0, 1).requires_grad_()  # softmax over dim 0: strided rows
    y = fn(x, 0, variant=variant)
    y.sum().backward()  # dy is an expanded tensor: every stride 0
    assert_close(x.grad, reference_grad(torch_fn, x, torch.ones(x.shape), 0), torch.float32)
    x.grad = None
    dy_t = torch.randn(7, 9, 50, device=device).permute(2, 1, 0)  # non-contiguous dy
    fn(x, 0, variant=variant).backward(dy_t)
    assert_close(x.grad, reference_grad(torch_fn, x, dy_t, 0), torch.float32)
    # Rows of one to a program (the tile variant's row kernel), dy's elements apart.
    long = torch.randn(3, 3001, device=device, requires_grad=True)
    dy_s = torch.randn(3, 6002, device=device)[:, ::2]
    fn(long, -1, variant=variant).backward(dy_s)
    assert_close(long.grad, reference_grad(torch_fn, long, dy_s, -1), torch.float32)


def test_grad_upcast_dtype(device: str) -> None:
    x = torch.randn(6, 40, device=device).to(torch.bfloat16).requires_grad_()
    y = ns.log_softmax(x, 1, dtype=torch.float32)
    dy = torch.randn(6, 40, device=device)
    y.backward(dy)
    assert x.grad.dtype == torch.bfloat16
    expected = reference_grad(torch.log_softmax, x.float(), dy, 1)
    assert_close(x.grad, expected, torch.bfloat16)


def test_grad_0d_and_empty(device: str) -> None:
    for shape in ((), (0, 4), (3, 0)):
        for name, (fn, torch_fn) in FUNCS.items():
            x = torch.randn(shape, device=device, requires_grad=True)
            fn(x, -1).sum().backward()
            xr = x.detach().cpu().requires_grad_()
            torch_fn(xr, -1).sum().backward()
            torch.testing.assert_close(x.grad.cpu(), xr.grad, msg=name)


@pytest.mark.parametrize("name", FUNCS)
def test_grad_of_a_sparse_upstream_gradient(device: str, name: str) -> None:
    """A sparse ``dy`` (torch's own softmax backward refuses one) is densified, through the
    eager path and through the custom op's autograd."""
    fn, torch_fn = FUNCS[name]
    op = ops.log_softmax if name == "log_softmax" else ops.softmax
    x = torch.randn(6, 40, device=device, requires_grad=True)
    dy = torch.randn(6, 40, device=device) * (torch.rand(6, 40, device=device) < 0.3)
    try:
        sparse = dy.to_sparse()
    except (RuntimeError, NotImplementedError):
        pytest.skip(f"no sparse tensors on {device}")
    expected = reference_grad(torch_fn, x, dy, 1, 0.5)
    for y in (fn(x, 1, temperature=0.5), op(x, 1, None, 0.5, None)):
        (dx,) = torch.autograd.grad(y, x, sparse)
        assert_close(dx, expected, torch.float32)


@pytest.mark.parametrize("name", FUNCS)
def test_efficient_zero_tensors(device: str, name: str) -> None:
    """An efficient zero tensor (``_is_zerotensor()``), which has no data to read: the gradient
    autograd hands ``torch.sgn``'s input, one as input and one as ``out``, each call twice (the
    second a kept signature's repeat). They raised 'invalid python storage' from the kernels'
    launch."""
    fn, torch_fn = FUNCS[name]
    zeros = torch.zeros(3, 4, device=device)
    for _ in range(2):
        x = torch.randn(3, 4, device=device, requires_grad=True)
        (dx,) = torch.autograd.grad(torch.sgn(fn(x, 1)).sum(), x)
        assert torch.equal(dx, zeros)
        z = torch._efficientzerotensor(3, 4, device=device)
        torch.testing.assert_close(fn(z, 1), torch_fn(zeros, 1))
        out = torch.empty(3, 4, device=device)
        fn(z, 0, out=out)
        torch.testing.assert_close(out, torch_fn(zeros, 0))
        # As out, refused as torch refuses one, a kept signature's repeat (second pass) too.
        fn(x.detach(), 0, out=out)
        with pytest.raises(RuntimeError, match="ZeroTensors are immutable"):
            fn(x.detach(), 0, out=torch._efficientzerotensor(3, 4, device=device))


@pytest.mark.parametrize("name", FUNCS)
@pytest.mark.parametrize("variant", [None, "split"])
def test_double_backward(kernel_device: str, name: str, variant: str | None) -> None:
    """create_graph=True gives a gradient autograd can differentiate again (Hessian-vector
    products), and the first derivative from that path matches the kernels'."""
    if launcher.target().backend == "npu":
        pytest.skip("no float64 on Ascend")
    fn, torch_fn = FUNCS[name]
    # Small: gradgradcheck runs the kernels several times per element (minutes interpreted).
    x = torch.randn(3, 5, dtype=torch.float64, device=kernel_device, requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda t: fn(t, 1, temperature=0.7, variant=variant),
                                        (x,))
    dy = torch.randn(3, 5, dtype=torch.float64, device=kernel_device)
    (g_graph,) = torch.autograd.grad(fn(x, 1, variant=variant), x, dy, create_graph=True)
    (g_kernel,) = torch.autograd.grad(fn(x, 1, variant=variant), x, dy)
    assert g_graph.requires_grad and not g_kernel.requires_grad
    ref = reference_grad(torch_fn, x, dy, 1)
    torch.testing.assert_close(g_graph.detach().cpu(), ref)
    torch.testing.assert_close(g_kernel.cpu(), ref)


@pytest.mark.parametrize("name", FUNCS)
def test_double_backward_of_a_parameter(kernel_device: str, name: str) -> None:
    """An ``nn.Parameter`` input (a module's weight) has second derivatives too."""
    fn, torch_fn = FUNCS[name]
    p = torch.nn.Parameter(torch.randn(3, 5, device=kernel_device))
    (g,) = torch.autograd.grad((fn(p, 1) * torch.arange(5.0, device=kernel_device)).sum(), p,
                               create_graph=True)
    (gg,) = torch.autograd.grad((g * g).sum(), p)
    q = p.detach().cpu().double().requires_grad_()
    (g64,) = torch.autograd.grad((torch_fn(q, 1) * torch.arange(5.0).double()).sum(), q,
                                 create_graph=True)
    (gg64,) = torch.autograd.grad((g64 * g64).sum(), q)
    assert_close(g, g64, torch.float32, scale=4)
    assert_close(gg, gg64, torch.float32, scale=4)


@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize("name", FUNCS)
def test_activation_checkpointing(device: str, name: str, reentrant: bool) -> None:
    """Under ``torch.utils.checkpoint`` the forward runs again in the backward pass; the
    gradient is the float64 one either way."""
    fn, torch_fn = FUNCS[name]
    x = torch.randn(6, 333, device=device, requires_grad=True)
    dy = torch.randn(6, 333, device=device)
    y = torch.utils.checkpoint.checkpoint(lambda t: fn(t, 0, temperature=0.8), x,
                                          use_reentrant=reentrant)
    y.backward(dy)
    assert_close(x.grad, reference_grad(torch_fn, x, dy, 0, temperature=0.8), torch.float32)
