"""Two non-syncs judged in session 11 (`n-nonsync2`).

1. A local that every binding in its function gives a list/tuple/set/dict display or
   comprehension holds a Python container, whatever its items are: `if parts:` asks for its
   length (SGLang's streaming VAE decoder, `torch.cat(parts, dim=2) if parts else ...` over a
   list of device slices). sequence_names.py; SYN206 asks `FunctionContext.holds_container`.
2. A block under `if p is not None:` on a parameter that defaults to None runs only for a call
   that passes a value: when every call in the tree passes a literal None or leaves it out, also
   calls by name on a receiver of unknown class (vLLM's sampler calls
   `holder.update_state(..., repeat_indices=None)` on a metadata field), it never runs
   (flagguards.py, beside `if flag:` on a parameter defaulting to off).
Each VALID package leaves the line out of the default report; each INVALID twin keeps it."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

# -- 1. containers -------------------------------------------------------------------------

OPS = """
    import torch

    def commit(raw: torch.Tensor, spans: list, end: int) -> torch.Tensor:
        parts = [raw[:, a:b] for a, b in spans if b > a]
        return torch.cat(parts, dim=1) if parts else raw[:, :0]
"""

MODEL = """
    import torch
    from pkg.ops import commit

    class Decoder(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            raw = torch.ones(4, 8, device="cuda")
            return commit(raw, [(0, 2)], 8)
"""

TEST_LINE = 6  # `... if parts else ...` in commit


def containers(ops=OPS):
    return {"ops.py": ops, "model.py": MODEL}


def test_a_list_comprehension_of_device_slices_is_no_tensor_as_a_truth_value(tmp_path):
    run = lint_package(tmp_path, containers())
    assert TEST_LINE not in lines(run)
    assert lines(run, "pkg/model.py") == []


def test_a_list_display_extended_by_plus_equals_is_still_a_list(tmp_path):
    ops = OPS.replace("        parts = [raw[:, a:b] for a, b in spans if b > a]\n",
                      "        parts = [raw[:, :1]]\n        parts += [raw[:, a:b] for a, b in spans]\n")
    run = lint_package(tmp_path, containers(ops))
    assert TEST_LINE + 1 not in lines(run)


def test_a_name_also_bound_to_a_tensor_is_still_tested(tmp_path):
    ops = OPS.replace("        return torch.cat(parts, dim=1) if parts else raw[:, :0]\n",
                      "        if spans:\n            parts = torch.cat(parts).sum()\n"
                      "        return raw if parts else raw[:, :0]\n")
    run = lint_package(tmp_path, containers(ops))
    assert TEST_LINE + 2 in lines(run)


def test_a_name_also_bound_by_a_loop_is_still_tested(tmp_path):
    ops = OPS.replace("        return torch.cat(parts, dim=1) if parts else raw[:, :0]\n",
                      "        for parts in raw:\n            pass\n"
                      "        return raw if parts else raw[:, :0]\n")
    run = lint_package(tmp_path, containers(ops))
    assert TEST_LINE + 2 in lines(run)


# -- 2. `is not None` on a parameter no call passes ----------------------------------------

STATE = """
    import torch

    class State:
        def update_state(self, rows: list, repeat_indices: torch.Tensor | None = None) -> None:
            last = None
            if repeat_indices is not None:
                last = repeat_indices.cpu().tolist()
            return last
"""

SAMPLER = """
    from dataclasses import dataclass

    import torch
    from torch import nn

    from pkg.state import State

    @dataclass
    class Meta:
        rows: list
        holder: State | None = None

    class Sampler(nn.Module):
        def forward(self, logits: torch.Tensor, meta: Meta):
            # a holder of no class the program can tell: `update_state` is called by name (a
            # local bound to `meta.holder` would be the field, of class State: field_locals.py)
            holder = getattr(meta, "holder", None)
            if holder is not None:
                holder.update_state(meta.rows, repeat_indices=None)
            return logits
"""

COPY_LINE = 8  # `repeat_indices.cpu()` in State.update_state


def sampled(sampler=SAMPLER):
    return {"state.py": STATE, "sampler.py": sampler}


def test_a_value_no_call_passes_leaves_its_not_none_block_cold(tmp_path):
    run = lint_package(tmp_path, sampled())
    assert COPY_LINE not in lines(run, "pkg/state.py")


def test_a_call_passing_a_tensor_keeps_the_block(tmp_path):
    sampler = SAMPLER.replace("repeat_indices=None", "repeat_indices=logits.argmax(-1)")
    state = STATE + "\n    def get_state():\n        return State()\n"
    run = lint_package(tmp_path, {"state.py": state, "sampler.py": sampler})
    assert COPY_LINE in lines(run, "pkg/state.py")


def test_a_false_passed_is_not_none(tmp_path):
    sampler = SAMPLER.replace("repeat_indices=None", "repeat_indices=False")
    state = STATE + "\n    def get_state():\n        return State()\n"
    run = lint_package(tmp_path, {"state.py": state, "sampler.py": sampler})
    assert COPY_LINE in lines(run, "pkg/state.py")


def test_a_value_passed_by_place_keeps_the_block(tmp_path):
    sampler = SAMPLER.replace("repeat_indices=None", "logits.argmax(-1)")
    state = STATE + "\n    def get_state():\n        return State()\n"
    run = lint_package(tmp_path, {"state.py": state, "sampler.py": sampler})
    assert COPY_LINE in lines(run, "pkg/state.py")


# -- 3. classes only another platform's code builds ----------------------------------------

PLATFORMS = """
    class Platform:
        def is_xpu(self) -> bool:
            return False

    current_platform = Platform()
"""

PREPARE = """
    import torch

    class BatchedPF:
        def prepare(self, x: torch.Tensor, ids: torch.Tensor):
            e_idx, t_idx = (ids == 1).nonzero(as_tuple=True)
            return x[t_idx]

    class StandardPF:
        def prepare(self, x: torch.Tensor, ids: torch.Tensor):
            return x
"""

UTILS = """
    from pkg.platforms import current_platform
    from pkg.prepare import BatchedPF, StandardPF

    def make_pf(backend: str):
        if current_platform.is_xpu() and backend == "batched":
            return BatchedPF()
        return StandardPF()

    def held(pf: BatchedPF) -> bool:
        return isinstance(pf, BatchedPF)
"""

HOLDER = """
    import torch

    from pkg.utils import make_pf

    class Model(torch.nn.Module):
        def __init__(self, pf):
            super().__init__()
            self.pf = pf

        def forward(self, x: torch.Tensor, ids: torch.Tensor):
            return self.pf.prepare(x, ids)
"""

NONZERO_LINE = 6  # `(ids == 1).nonzero(...)` in BatchedPF.prepare


def built(extra=""):
    return {"platforms.py": PLATFORMS, "prepare.py": PREPARE, "utils.py": UTILS + extra, "model.py": HOLDER}


def test_a_class_built_only_under_another_platform_is_never_entered(tmp_path):
    run = lint_package(tmp_path, built())
    assert NONZERO_LINE not in lines(run, "pkg/prepare.py")


def test_a_construction_outside_the_platform_test_keeps_it(tmp_path):
    run = lint_package(tmp_path, built("\n    def other():\n        return BatchedPF()\n"))
    assert NONZERO_LINE in lines(run, "pkg/prepare.py")


def test_a_class_kept_in_a_registry_keeps_it(tmp_path):
    run = lint_package(tmp_path, built('\n    REGISTRY = {"batched": BatchedPF}\n'))
    assert NONZERO_LINE in lines(run, "pkg/prepare.py")


def test_a_subclass_keeps_it(tmp_path):
    run = lint_package(tmp_path, built("\n    class Sub(BatchedPF):\n        pass\n"))
    assert NONZERO_LINE in lines(run, "pkg/prepare.py")


def test_a_class_path_string_keeps_it(tmp_path):
    run = lint_package(tmp_path, built('\n    PATH = "pkg.prepare.BatchedPF"\n'))
    assert NONZERO_LINE in lines(run, "pkg/prepare.py")


def test_a_class_imported_under_another_name_keeps_it(tmp_path):
    extra = "\n    from pkg.prepare import BatchedPF as Other\n\n    def other():\n        return Other()\n"
    run = lint_package(tmp_path, built(extra))
    assert NONZERO_LINE in lines(run, "pkg/prepare.py")


# -- 4. calls into another platform's file --------------------------------------------------

HOOKS = """
    import torch

    def maybe_build_bundle(pool, locs: torch.Tensor):
        if not hasattr(pool, "npu_sidecar"):
            return None
        return locs[locs >= 0]
"""

WORKER = """
    import torch

    from pkg.{where}.hooks import maybe_build_bundle

    class Worker(torch.nn.Module):
        def forward(self, pool, locs: torch.Tensor):
            bundle = maybe_build_bundle(pool, locs)
            return locs if bundle is None else bundle
"""

HOOK_CALL_LINE = 8  # `maybe_build_bundle(pool, locs)` in Worker.forward


def hooked(where):
    return {f"{where}/hooks.py": HOOKS, "worker.py": WORKER.format(where=where)}


def test_a_call_into_another_platforms_file_does_not_sync_for_its_caller(tmp_path):
    run = lint_package(tmp_path, hooked("npu"))
    assert HOOK_CALL_LINE not in lines(run, "pkg/worker.py")


def test_a_call_into_a_shared_file_syncs_for_its_caller(tmp_path):
    run = lint_package(tmp_path, hooked("common"))
    assert HOOK_CALL_LINE in lines(run, "pkg/worker.py")


def test_a_shared_helper_that_calls_another_platforms_file_does_not_sync_for_its_callers(tmp_path):
    helper = "\n    def prepare(pool, locs: torch.Tensor):\n        return maybe_build_bundle(pool, locs)\n"
    worker = WORKER.format(where="npu").replace("bundle = maybe_build_bundle(", "bundle = prepare(") + helper
    run = lint_package(tmp_path, {"npu/hooks.py": HOOKS, "worker.py": worker})
    assert lines(run, "pkg/worker.py") == []
    (tmp_path / "shared").mkdir()
    shared = lint_package(tmp_path / "shared", {"common/hooks.py": HOOKS,
                                                "worker.py": worker.replace("pkg.npu.", "pkg.common.")})
    assert HOOK_CALL_LINE in lines(shared, "pkg/worker.py")


def test_a_call_the_records_do_not_keep_still_passes_it(tmp_path):
    # `get_state().update_state(...)`: a receiver the per-file records keep no call for
    sampler = SAMPLER.replace("from pkg.state import State\n", "from pkg.state import State, get_state\n")
    sampler = sampler.replace("        return logits\n",
                              "        get_state().update_state(meta.rows, repeat_indices=logits.argmax(-1))\n"
                              "        return logits\n")
    state = STATE + "\n    def get_state():\n        return State()\n"
    run = lint_package(tmp_path, {"state.py": state, "sampler.py": sampler})
    assert COPY_LINE in lines(run, "pkg/state.py")
