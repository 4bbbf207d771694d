"""``python -m npu_softmax`` (``npu_softmax.__main__.main``), on small cases: what it says ran,
and the arguments it starts itself again with."""

from __future__ import annotations

import os

import pytest
import torch

import npu_softmax.__main__ as main_job
from npu_softmax import launcher


def test_main_job_says_what_ran_on_the_cpu(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """On the CPU the closing note names the interpreter only where the kernels ran in it;
    with ``TRITON_INTERPRET=0`` it said so while CPU tensors took the torch fallback."""
    interpreted = launcher.serves(torch.device("cpu"))
    if "TRITON_INTERPRET" not in os.environ:
        # A GPU or NPU host: this process runs no interpreter, and main() would start
        # itself again under one (os.execve, replacing the test's process).
        monkeypatch.setenv("TRITON_INTERPRET", "1" if interpreted else "0")
    monkeypatch.setattr(main_job, "_device", lambda: "cpu")
    monkeypatch.setitem(main_job.CASES, "cpu", [(3, 5, torch.float32)])
    assert main_job.main(["--seed", "0"]) == 0
    printed = capsys.readouterr().out
    assert "all checks passed" in printed
    assert ("the Triton kernels ran in Triton's CPU interpreter" in printed) == interpreted
    assert ("took the torch.softmax fallback" in printed) == (not interpreted)


def test_main_job_starts_again_with_its_own_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``TRITON_INTERPRET`` on a machine with no GPU or NPU, ``main(argv)`` starts
    ``python -m npu_softmax`` again with ``argv``, not with the arguments of the process that
    called it."""
    started = []

    def execve(path: str, args: list[str], env: dict[str, str]) -> None:
        started.append((args, env["TRITON_INTERPRET"]))
        raise SystemExit(0)

    monkeypatch.setattr(main_job, "_device", lambda: "cpu")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(main_job.os, "execve", execve)
    monkeypatch.setattr(main_job.sys, "argv", ["pytest", "-k", "something"])
    with pytest.raises(SystemExit):
        main_job.main(["--seed", "7"])
    ((args, interpret),) = started
    assert args[1:] == ["-m", "npu_softmax", "--seed", "7"]
    assert interpret == "1"
