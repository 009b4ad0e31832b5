"""A read of a field that its class keeps as a Python value (`draft_token_num: int`, declared in
another module, or filled from a parameter annotated `int`) is no sync: the report drops such a
finding (engine.py), and the whole-program pass drops its root too (program.py), so a caller is
not told that the callee syncs (SYN602). Small packages: the classes in one module, the helper
that reads them in a second (importing the class only for type checking, as SGLang's
`eagle_utils.py` does), its callers in a third."""

from __future__ import annotations

from test_lint_scope import lint_package, where

INFO = """
    from dataclasses import dataclass
    import torch

    @dataclass
    class VerifyInput:
        draft_token_num: int
        reps: torch.Tensor

    class NgramVerifyInput:
        def __init__(self, draft_token_num: int = None, reps: torch.Tensor = None):
            self.draft_token_num = draft_token_num
            self.reps = reps
"""

UTILS = """
    from __future__ import annotations
    from typing import TYPE_CHECKING
    import torch
    if TYPE_CHECKING:
        from pkg.info import VerifyInput

    def sample(verify_input: VerifyInput, batch, logits: torch.Tensor):
        sampling_info = batch.sampling_info
        if sampling_info.penalties is not None:
            logits.add_(torch.repeat_interleave(sampling_info.penalties, verify_input.FIELD, dim=0))
        return logits
"""

WORKER = """
    import torch
    from pkg.info import NgramVerifyInput
    from pkg.utils import sample

    class Worker:
        def forward_batch_generation(self, x: torch.Tensor, batch):
            verify_input: NgramVerifyInput = batch.spec_info
            return sample(verify_input, batch, x)
"""


def _run(tmp_path, field: str):
    return lint_package(tmp_path, {"info.py": INFO, "utils.py": UTILS.replace("FIELD", field), "worker.py": WORKER})


def test_repeats_read_from_an_int_field_are_no_sync_for_the_callers(tmp_path):
    # VALID: `draft_token_num` is an int in both classes: neither the helper nor its caller
    found = where(_run(tmp_path, "draft_token_num"))
    assert not [f for f in found if f[0] in ("pkg/utils.py", "pkg/worker.py")], found


def test_repeats_read_from_a_tensor_field_still_sync_for_the_callers(tmp_path):
    # INVALID twin: `reps` is a tensor: the helper's repeat and the caller's call are reported
    found = where(_run(tmp_path, "reps"))
    assert ("pkg/worker.py", 9, "SYN602") in found, found


def test_a_field_filled_from_an_int_parameter_is_a_python_value(tmp_path):
    helper = UTILS.replace("FIELD", "draft_token_num").replace("VerifyInput", "NgramVerifyInput")
    # VALID: `self.draft_token_num = draft_token_num` with `draft_token_num: int = None`
    found = where(lint_package(tmp_path, {"info.py": INFO, "utils.py": helper, "worker.py": WORKER}))
    assert not [f for f in found if f[0] in ("pkg/utils.py", "pkg/worker.py")], found
    # INVALID twin: the method rebinds the name to a tensor first: the annotation no longer holds
    rebinding = INFO.replace("self.draft_token_num = draft_token_num",
                             "draft_token_num = torch.tensor([draft_token_num], device='cuda')\n"
                             "            self.draft_token_num = draft_token_num")
    found = where(lint_package(tmp_path, {"info.py": rebinding, "utils.py": helper, "worker.py": WORKER}))
    assert ("pkg/utils.py", 11, "SYN104") in found and ("pkg/worker.py", 9, "SYN602") in found, found
