"""``python -m npu_softmax``: run the kernels on whatever device is here and check them.

Prints the detected Triton target and device, runs softmax on an irregular matrix and on a
vocabulary-sized batch of logits, checks each against ``torch.softmax`` in float64, and on a GPU
or NPU prints GB/s beside ``torch.softmax`` and a device-to-device copy of the same bytes.
Exits 1 when a check fails. On a machine with no GPU or NPU it runs the kernels under Triton's
interpreter: it starts itself again with ``TRITON_INTERPRET=1``, which Triton reads at import
(and ``import npu_softmax`` has imported Triton before this module runs). With
``TRITON_INTERPRET`` already set to anything but 1 it checks the CPU's torch fallback instead,
and says so.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

import torch


def _device() -> str:
    try:
        import torch_npu  # noqa: F401
    except ImportError:
        pass
    if hasattr(torch, "npu") and torch.npu.is_available():
        return "npu"
    return "cuda" if torch.cuda.is_available() else "cpu"


#: (rows, cols, dtype) per device: the tutorial's irregular matrix and vocabulary-sized rows.
CASES = {
    "gpu": [(1823, 781, torch.float32), (4096, 8192, torch.bfloat16),
            (32, 151936, torch.float32), (32, 151936, torch.bfloat16)],
    "cpu": [(1823, 781, torch.float32), (4, 151936, torch.float32),
            (4, 151936, torch.bfloat16)],
}
#: Largest |y - reference| accepted per output dtype (probabilities lie in [0, 1]).
MAX_ERROR = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}


def _speeds(x: torch.Tensor, softmax: Callable) -> list[float]:
    """GB/s of npu_softmax, torch.softmax and a copy of the same bytes, on copies of ``x`` (a
    new one each call, ``timing.inputs``)."""
    from npu_softmax.timing import gbps, inputs, time_ms

    n_bytes = 2 * x.numel() * x.element_size()
    copy_dst = torch.empty_like(x)
    nxt = inputs(x)
    fns = (lambda: softmax(nxt(), -1), lambda: torch.softmax(nxt(), -1),
           lambda: copy_dst.copy_(nxt()))
    return [gbps(n_bytes, time_ms(fn)) for fn in fns]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m npu_softmax", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=None, help="torch seed (default: random)")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)

    device = _device()
    if device == "cpu" and "TRITON_INTERPRET" not in os.environ:
        # Again with the arguments of this call (``main(argv)`` from code has its own).
        env = dict(os.environ, TRITON_INTERPRET="1")
        os.execve(sys.executable, [sys.executable, "-m", "npu_softmax", *argv], env)
    import npu_softmax
    from npu_softmax import launcher

    info = npu_softmax.target_info()
    print("npu_softmax", npu_softmax.__version__, "| torch", info["torch"], "| triton",
          info["triton"])
    print(f"target: {info['backend']} ({info['arch']}), device: "
          f"{info.get('device_name', 'cpu')}, cores: {info.get('cores', '-')}, "
          f"cpu tensors: {info['cpu_tensors']}")
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    torch.manual_seed(seed)
    print(f"seed {seed}\n")

    timed = device != "cpu"
    header = f"{'shape':>16} {'dtype':>9} {'max |err|':>10} {'row-sum err':>11} {'check':>5}"
    if timed:
        header += f" {'npu_softmax':>12} {'torch':>9} {'copy':>9}  (GB/s)"
    print(header)
    failed = 0
    for rows, cols, dtype in CASES["cpu" if device == "cpu" else "gpu"]:
        x = (torch.randn(rows, cols, device=device) * 4).to(dtype)
        y = npu_softmax.softmax(x, -1)
        # The reference on the CPU, in float64 (an NPU may lack float64 arithmetic).
        ref = torch.softmax(x.cpu().double(), -1)
        y64 = y.cpu().double()
        err = (y64 - ref).abs().max().item()
        row_sum = (y64.sum(-1) - 1).abs().max().item()
        ok = err <= MAX_ERROR[dtype]
        failed += not ok
        line = (f"{f'{rows}x{cols}':>16} {str(dtype).replace('torch.', ''):>9} {err:>10.2e} "
                f"{row_sum:>11.2e} {'ok' if ok else 'FAIL':>5}")
        if timed:
            speeds = _speeds(x, npu_softmax.softmax)
            line += " " + " ".join(f"{s:>{w}.0f}" for s, w in zip(speeds, (12, 9, 9)))
        print(line)
    if not timed and launcher.serves(torch.device("cpu")):
        print("\n(no GPU or NPU here: the Triton kernels ran in Triton's CPU interpreter; "
              "timings are shown on a device only)")
    elif not timed:
        # TRITON_INTERPRET=0 (or any value but 1): no Triton kernel ran at all.
        print("\n(no GPU or NPU here, and TRITON_INTERPRET is not 1: CPU tensors took the "
              "torch.softmax fallback and no Triton kernel ran; unset TRITON_INTERPRET or set "
              "it to 1 to run the kernels in Triton's CPU interpreter)")
    print("\nall checks passed" if not failed else f"\n{failed} check(s) FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
