"""Once-per-object properties and branches only a caller's arguments take (issue 24, classes 3
and 5): a `@cached_property` of a class that serves steps (memo.py), and a guarded block of a
per-step function that no per-step call's arguments take (stepargs.py), directly or through a
parameter passed on. Each VALID package is left out of the default report and shows up as cold,
with its reason, under `include_cold`; each INVALID twin is still reported."""

from __future__ import annotations

from test_lint_guards import cold_reasons, lines
from test_lint_scope import lint_package

# -- 1. a cached property of an object that lives across steps ------------------------------
ROPE = """
    import functools
    import torch

    class Rope(torch.nn.Module):
        @functools.cached_property
        def table(self) -> torch.Tensor:
            return torch.arange(0, 64).float().to("cuda")

        def forward(self, x: torch.Tensor):
            return x * self.table[: x.shape[0]]
"""

PER_STEP_DATA = """
    import functools
    import torch

    class StepMetadata:
        def __init__(self, lens: list[int]):
            self.lens = lens

        @functools.cached_property
        def table(self) -> torch.Tensor:
            return torch.tensor(self.lens).to("cuda")

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor, lens: list[int]):
            meta = StepMetadata(lens)
            return x * meta.table
"""


def test_a_cached_property_of_a_module_runs_once_per_object(tmp_path):
    # the property's own copy is latent (its readers' sync); its reader in `forward` is no
    # longer flagged: the body runs once per module, which lives across steps
    run = lint_package(tmp_path, {"ops.py": ROPE}, include_cold=True)
    assert [f for f in run.findings if f.site.path == "pkg/ops.py"] == []


def test_a_cached_property_of_an_object_built_every_step_stays_per_step(tmp_path):
    run = lint_package(tmp_path, {"ops.py": PER_STEP_DATA})
    assert 16 in lines(run)


# -- 2. a flag only a shutdown path turns on -----------------------------------------------
PUSHER = """
    import torch

    class Pusher:
        def submit(self, event: torch.cuda.Event, *, wait: bool = False) -> bool:
            if wait:
                event.synchronize()
            elif not event.query():
                return False
            return True
"""

WORKER = """
    import torch
    from pkg.pusher import Pusher

    class Worker:
        def __init__(self):
            self.pusher = Pusher()

        def execute_model(self, event: torch.cuda.Event):
            return self.pusher.submit(event)

        def shutdown(self, event: torch.cuda.Event):
            self.pusher.submit(event, wait=True)
"""


def test_a_branch_only_a_shutdown_call_takes_is_not_per_step(tmp_path):
    run = lint_package(tmp_path, {"pusher.py": PUSHER, "worker.py": WORKER})
    assert lines(run, "pkg/pusher.py") == []
    reasons = cold_reasons(tmp_path, "pkg/pusher.py")
    assert "runs only when `wait` in `submit`, and no per-step call" in reasons[7]


def test_a_branch_a_per_step_call_takes_stays_per_step(tmp_path):
    worker = WORKER.replace("return self.pusher.submit(event)", "return self.pusher.submit(event, wait=True)")
    run = lint_package(tmp_path, {"pusher.py": PUSHER, "worker.py": worker})
    assert lines(run, "pkg/pusher.py") == [7]


def test_a_branch_a_per_step_call_may_take_with_an_unknown_value_stays_per_step(tmp_path):
    worker = WORKER.replace("def execute_model(self, event: torch.cuda.Event):",
                            "def execute_model(self, event: torch.cuda.Event, flush):") \
                   .replace("return self.pusher.submit(event)", "return self.pusher.submit(event, wait=flush.done)")
    run = lint_package(tmp_path, {"pusher.py": PUSHER, "worker.py": worker})
    assert lines(run, "pkg/pusher.py") == [7]


# -- 3. a flag passed on through a wrapper -------------------------------------------------
LOGPROBS = """
    import torch

    def top_raw(logprobs: torch.Tensor, k: int, no_copy_to_cpu: bool = False):
        values, indices = logprobs.topk(k, dim=-1)
        if not no_copy_to_cpu:
            values = values.tolist()
            indices = indices.tolist()
        return values, indices

    def top(logprobs: torch.Tensor, k: int, no_copy_to_cpu: bool = False):
        return top_raw(logprobs, k, no_copy_to_cpu=no_copy_to_cpu)
"""

SAMPLER = """
    import torch
    from pkg.logprobs import top

    class Sampler(torch.nn.Module):
        def forward(self, logits: torch.Tensor):
            return top(logits.log_softmax(-1), 5, no_copy_to_cpu=True)
"""


def test_a_flag_a_wrapper_passes_on_is_decided_by_the_per_step_callers(tmp_path):
    run = lint_package(tmp_path, {"logprobs.py": LOGPROBS, "sampler.py": SAMPLER})
    assert lines(run, "pkg/logprobs.py") == []
    assert lines(run, "pkg/sampler.py") == []
    reasons = cold_reasons(tmp_path, "pkg/logprobs.py")
    assert "runs only when `not no_copy_to_cpu` in `top_raw`" in reasons[7]


def test_a_wrapper_whose_per_step_caller_leaves_the_flag_off_stays_per_step(tmp_path):
    sampler = SAMPLER.replace(", no_copy_to_cpu=True)", ")")
    run = lint_package(tmp_path, {"logprobs.py": LOGPROBS, "sampler.py": sampler})
    assert lines(run, "pkg/logprobs.py") == [7, 8, 12]
    assert lines(run, "pkg/sampler.py") == [7]


def test_a_wrapper_that_rebinds_the_flag_before_passing_it_on_stays_per_step(tmp_path):
    logprobs = LOGPROBS.replace("        return top_raw(", "        no_copy_to_cpu = k > 8\n        return top_raw(")
    run = lint_package(tmp_path, {"logprobs.py": logprobs, "sampler.py": SAMPLER})
    assert 7 in lines(run, "pkg/logprobs.py")


# -- 4. a module cache grown when a bigger size comes ---------------------------------------
GROW = """
    import torch

    _BUFFERS = {}

    def buffers(bs: int, device: torch.device) -> torch.Tensor:
        key = device.index
        cached = _BUFFERS.get(key)
        cap = 0 if cached is None else int(cached["cap"])
        if cap < bs:
            table = torch.tensor(list(range(bs * 2)), device=device)
            cached = {"cap": bs * 2, "table": table}
            _BUFFERS[key] = cached
        return cached["table"][:bs]
"""

GROW_MODEL = """
    import torch
    from pkg.ops import buffers

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            return x + buffers(x.shape[0], x.device)
"""


def test_a_module_buffer_rebuilt_only_for_a_bigger_size_is_not_per_step(tmp_path):
    run = lint_package(tmp_path, {"ops.py": GROW, "model.py": GROW_MODEL})
    assert lines(run) == []
    assert lines(run, "pkg/model.py") == []
    assert "runs once per new largest size" in cold_reasons(tmp_path)[11]


def test_a_rebuild_tested_on_something_the_cache_does_not_hold_stays_per_step(tmp_path):
    ops = GROW.replace("if cap < bs:", "if bs > 8:")
    run = lint_package(tmp_path, {"ops.py": ops, "model.py": GROW_MODEL})
    assert lines(run) == [11]


def test_a_cached_property_of_a_submodule_without_forward_runs_once_per_object(tmp_path):
    ops = ROPE.replace("        def forward(self, x: torch.Tensor):\n            return x * self.table[: x.shape[0]]",
                       "        def scale(self, x: torch.Tensor):\n            return x * self.table[: x.shape[0]]") + """
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rope = Rope()

        def forward(self, x: torch.Tensor):
            return self.rope.scale(x)
"""
    run = lint_package(tmp_path, {"ops.py": ops}, include_cold=True)
    assert [f for f in run.findings if f.site.path == "pkg/ops.py"] == []


# -- 5. a flag that reaches the callee through `**kwargs` ----------------------------------
KERNEL = """
    import torch

    def _validate(lens: torch.Tensor):
        return lens.cpu()

    def _run(q: torch.Tensor, lens: torch.Tensor, check_input_valid: bool = False):
        if check_input_valid:
            _validate(lens)
        return q * 2

    def run(q: torch.Tensor, lens: torch.Tensor, **kwargs):
        return _run(q, lens, **kwargs)
"""

KERNEL_MODEL = """
    import torch
    from pkg.kernel import run

    class Model(torch.nn.Module):
        def forward(self, q: torch.Tensor, lens: torch.Tensor):
            return run(q, lens, scale=1.0)
"""


def test_a_flag_left_out_of_the_kwargs_a_wrapper_hands_on_is_not_per_step(tmp_path):
    run = lint_package(tmp_path, {"kernel.py": KERNEL, "model.py": KERNEL_MODEL})
    assert lines(run, "pkg/kernel.py") == []
    assert "runs only when `check_input_valid` in `_run`" in cold_reasons(tmp_path, "pkg/kernel.py")[9]


def test_a_flag_a_per_step_call_puts_in_the_kwargs_stays_per_step(tmp_path):
    model = KERNEL_MODEL.replace("scale=1.0", "check_input_valid=True")
    run = lint_package(tmp_path, {"kernel.py": KERNEL, "model.py": model})
    assert 9 in lines(run, "pkg/kernel.py")


# a second caller that passes its `*args` on (vLLM's `_fmha_sm100_ffi(*args)`, an FFI entry
# nothing in the tree calls)
FFI = """
    import torch
    from pkg.kernel import run

    def run_ffi(*args):
        return run(*args{more})

    class Model(torch.nn.Module):
        def forward(self, q: torch.Tensor, lens: torch.Tensor):
            return run_ffi(q, lens)
"""


def test_a_caller_passing_star_args_cannot_put_a_flag_in_the_kwargs(tmp_path):
    files = {"kernel.py": KERNEL, "model.py": KERNEL_MODEL, "ffi.py": FFI.format(more="")}
    assert lines(lint_package(tmp_path, files), "pkg/kernel.py") == []


def test_a_caller_passing_a_mapping_may_put_a_flag_in_the_kwargs(tmp_path):
    files = {"kernel.py": KERNEL, "model.py": KERNEL_MODEL, "ffi.py": FFI.format(more=", **{}")}
    assert 9 in lines(lint_package(tmp_path, files), "pkg/kernel.py")


def test_a_method_per_step_code_calls_by_name_on_an_unknown_receiver_keeps_its_branch(tmp_path, monkeypatch):
    # `make_runner()` returns an object of unknown class: `runner.submit(..., wait=True)` may
    # reach `Pusher.submit` with the flag on, even where the walk does not follow a name that
    # many methods define (here: any name)
    from syncscope.lint import reachability

    monkeypatch.setattr(reachability, "MAX_DISPATCH", 0)
    worker = WORKER + """
        def step(self, event: torch.cuda.Event, make_runner):
            runner = make_runner()
            return runner.submit(event, wait=True)
"""
    # named `push` here: an executor's `submit` reaches no method by name (library facts `no-dispatch`)
    pusher, worker = PUSHER.replace("submit", "push"), worker.replace("submit", "push")
    run = lint_package(tmp_path, {"pusher.py": pusher, "worker.py": worker})
    assert lines(run, "pkg/pusher.py") == [7]
