"""Measure npu_softmax's error against a float64 softmax, per variant and dtype; print a
Markdown table for docs/accuracy.md.

    python scripts/accuracy.py            # cuda/npu when present, else the CPU interpreter
    python scripts/accuracy.py --device cpu --seed 1

Per row of the table: max absolute error, max relative error (over reference values above the
dtype's smallest normal, where a relative error means something) and the worst row sum
``|sum(y) - 1|`` (summed in float64). Inputs are ``randn * 3``, plus a ``* 30`` set for wide
dynamic range.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform

import torch


def _default_device() -> str:
    try:
        import torch_npu  # noqa: F401

        if torch.npu.is_available():
            return "npu"
    except ImportError:
        pass
    return "cuda" if torch.cuda.is_available() else "cpu"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="cpu, cuda or npu")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    device = args.device or _default_device()
    if device == "cpu":
        # The kernels run on CPU tensors only under Triton's interpreter; set before import.
        os.environ.setdefault("TRITON_INTERPRET", "1")

    import npu_softmax
    from npu_softmax import checks, launcher

    interpreted = launcher.target().interpreter
    # Interpreted runs are slow: fewer rows, and rows of a few chunks for the looped kernels.
    shapes = {
        "tile": (256, 1000) if interpreted else (4096, 4000),
        "online": (16, 10007) if interpreted else (512, 100003),
        "split": (4, 10007) if interpreted else (8, 1000003),
    }
    dtypes = list(checks.supported_dtypes(torch.device(device)))
    info = npu_softmax.target_info()
    print(f"Measured {datetime.date.today()} on {info.get('device_name') or platform.machine()} "
          f"({info['backend']}, {'interpreter' if interpreted else info['arch']}), "
          f"torch {info['torch']}, triton {info['triton']}, seed {args.seed}.\n")
    print("| variant | shape | dtype | scale | max abs err | max rel err | max abs(row sum - 1) |")
    print("|---|---|---|---|---|---|---|")
    gen = torch.Generator().manual_seed(args.seed)
    for variant, shape in shapes.items():
        for dtype in dtypes:
            for scale in (3.0, 30.0):
                x = (torch.randn(shape, generator=gen, dtype=torch.float64) * scale).to(dtype)
                y = npu_softmax.softmax(x.to(device), -1, variant=variant).cpu().double()
                ref = torch.softmax(x.double(), -1)
                err = (y - ref).abs()
                normal = ref > torch.finfo(dtype).tiny
                rel = (err[normal] / ref[normal]).max().item()
                row_sum = (y.sum(-1) - 1).abs().max().item()
                name = str(dtype).removeprefix("torch.")
                print(f"| {variant} | {shape[0]}x{shape[1]} | {name} | {scale:g} | "
                      f"{err.max().item():.2e} | {rel:.2e} | {row_sum:.2e} |")


if __name__ == "__main__":
    main()
