"""Syncs that torch.compile makes while it compiles: Inductor's graph passes (constant folding,
pattern set-up, padding decisions that benchmark a matmul) and the autotuning that benchmarks a
kernel's configurations on its first call.

They happen inside torch, once per compiled shape, and only when the compile caches are cold (a
warm FX-graph or autotune cache skips them), so they are no sync of the program's steady state:
a baseline that held them would change from run to run. The recorder keeps them, marked allowed
with `REASON`, so they show in the report's allowed group and never enter a baseline or fail the
gate. Seen on the H100 (torch 2.11, tests/parity/programs/compiled_decode.py): every one has one of
the frames below on its stack, and no steady-state call of compiled code has any of them.

Inductor's generated modules (in its cache directory) are torch's code, not the user's: their
frames are skipped when naming a site, so a sync in compiled code is named at the user's call of
the compiled function, on every run (the generated file's name is a hash)."""

from __future__ import annotations

import os
import sys

REASON = "torch.compile: compiling or autotuning (once per compiled shape, cold caches only)"

# Any frame of these files means torch.compile is compiling or autotuning.
_COMPILING_FILES = (
    "torch/_dynamo/convert_frame.py",
    "torch/_inductor/compile_fx.py",
    "torch/_inductor/select_algorithm.py",
    "torch/_inductor/autotune_process.py",
    "torch/_inductor/runtime/benchmarking.py",
    "torch/_inductor/runtime/coordinate_descent_tuner.py",
)
# Inductor's kernel launcher runs every call of compiled code; only these of its functions tune.
_LAUNCHER = "torch/_inductor/runtime/triton_heuristics.py"
_LAUNCHER_TUNING = frozenset({"autotune_to_one_config", "benchmark_all_configs", "bench", "precompile", "coordinate_descent_tuning"})


def reason(frame) -> str | None:
    """`REASON` if the sync seen at `frame` (the innermost Python frame) is torch.compile's own."""
    if "torch._inductor" not in sys.modules and "torch._dynamo.convert_frame" not in sys.modules:
        return None  # nothing compiled yet: no walk
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if "_inductor" in filename or "_dynamo" in filename:
            path = filename.replace(os.sep, "/")
            if path.endswith(_COMPILING_FILES) or (path.endswith(_LAUNCHER) and code.co_name in _LAUNCHER_TUNING):
                return REASON
        frame = frame.f_back
    return None


def generated_code_dir() -> str | None:
    """Inductor's cache directory, where its generated modules live, once Inductor has chosen it
    (it writes the choice to TORCHINDUCTOR_CACHE_DIR before it writes any module there)."""
    directory = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    return os.path.join(os.path.abspath(directory), "") if directory else None
