"""torch.compile's own syncs (runtime/compile_phase.py): a sync with a compiling or autotuning
frame of Inductor on its stack is allowed with compile_phase.REASON; one in the launcher's
steady-state path is not; Inductor's generated modules are not the user's code. The frames are
made from code compiled under torch's file names (the GPU half: tests/test_gpu_parity.py,
compiled_decode)."""

from __future__ import annotations

import os
import sys
import types

import pytest
import torch

from syncscope.runtime import compile_phase
from syncscope.runtime.recorder import Recorder


def _made_up(filename: str, function: str):
    """A function named `function`, whose code says it lives in `filename`: `f(g, *rest)` returns
    `g(*rest)`, so made-up functions chain (`f(g, h, x)` calls `g(h, x)`, which calls `h(x)`)."""
    source = f"def {function}(inner, *rest):\n    return inner(*rest)\n"
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[function]


@pytest.fixture
def inductor_loaded(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch._inductor", sys.modules.get("torch._inductor") or types.ModuleType("torch._inductor"))


# Made-up files under the real torch package, so the recorder takes them for torch's frames.
TORCH = os.path.join(os.path.dirname(torch.__file__), "")


@pytest.mark.parametrize(
    "filename, function",
    [
        (TORCH + "_inductor/runtime/benchmarking.py", "benchmark_gpu"),
        (TORCH + "_inductor/compile_fx.py", "compile_fx_forward"),
        (TORCH + "_dynamo/convert_frame.py", "_compile"),
        (TORCH + "_inductor/runtime/triton_heuristics.py", "autotune_to_one_config"),
    ],
)
def test_a_sync_under_compiling_or_autotuning_frames_is_torch_compiles_own(inductor_loaded, filename, function):
    assert _made_up(filename, function)(lambda: compile_phase.reason(sys._getframe())) == compile_phase.REASON


def test_the_launchers_steady_state_path_and_user_code_are_not(inductor_loaded):
    launcher = TORCH + "_inductor/runtime/triton_heuristics.py"
    assert _made_up(launcher, "run")(lambda: compile_phase.reason(sys._getframe())) is None
    assert _made_up(TORCH + "_inductor/output_code.py", "__call__")(lambda: compile_phase.reason(sys._getframe())) is None
    assert compile_phase.reason(sys._getframe()) is None


def test_nothing_is_walked_before_inductor_or_dynamo_compiles(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch._inductor", raising=False)
    monkeypatch.delitem(sys.modules, "torch._dynamo.convert_frame", raising=False)
    frame_of = lambda: compile_phase.reason(sys._getframe())  # noqa: E731
    assert _made_up(TORCH + "_inductor/runtime/benchmarking.py", "benchmark_gpu")(frame_of) is None


def test_the_recorder_allows_compile_syncs_and_names_the_users_call_past_generated_code(inductor_loaded, tmp_path, monkeypatch):
    cache = tmp_path / "torchinductor_me"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    recorder = Recorder(root=str(tmp_path))

    # torch.cuda.synchronize's detector records at torch's frame, under Inductor's launcher
    # autotuning a kernel on its first call from the generated module.
    record = lambda: recorder.record("device_sync", "torch.cuda.synchronize", frame=sys._getframe().f_back)  # noqa: E731
    synchronize = _made_up(TORCH + "cuda/__init__.py", "synchronize")
    autotune = _made_up(TORCH + "_inductor/runtime/triton_heuristics.py", "autotune_to_one_config")
    generated = _made_up(str(cache / "kc" / "ckc123.py"), "call")

    event, line = generated(autotune, synchronize, record), sys._getframe().f_lineno
    assert event.allowed and event.allow_reason == compile_phase.REASON
    # Not the generated file (its name is a hash that changes between runs) but its caller here.
    assert event.site.path.endswith("test_compile_phase.py") and event.site.line == line
    assert "torchinductor_me" not in "".join(f.path for f in event.stack)

    steady = generated(synchronize, record)  # a sync of compiled code's own, at steady state
    assert not steady.allowed and steady.allow_reason is None
    assert steady.site.function.endswith("past_generated_code")
