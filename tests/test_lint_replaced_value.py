"""A block tested on whether a call replaced a value the function saved first runs only on that
call's exception path (rare_events.replaced_value): SGLang 0.5.23's multimodal embedding saves
`original_input_ids = input_ids`, lets a helper hand the ids back (rewritten only by a model that
prunes video frames), and counts the placeholders with `.sum().item()` only `if input_ids is not
original_input_ids:` (mm_schedule.py:778, reached from some 70 models' forward). The VALID
package leaves that sync out of the default report and keeps it, with its reason, under
`--include-cold`; each INVALID twin keeps it per step."""

from __future__ import annotations

from test_lint_guards import cold_reasons, lines
from test_lint_scope import lint_package

EMBED = """
    import torch

    def _embed(ids: torch.Tensor, prune: bool):
        if prune:
            return torch.zeros(3), ids[:-1]
        return torch.zeros(3), ids

    def embed_and_mask(ids: torch.Tensor, placeholder: torch.Tensor, prune: bool):
        original_ids = ids
        embedding, ids = {rebind}
        mask = ids == placeholder
        if ids is not original_ids:
            count = mask.sum().item()
        else:
            count = 3
        return embedding[:count], mask
"""

MODEL = """
    import torch
    from pkg.embed import embed_and_mask

    class Model(torch.nn.Module):
        def forward(self, ids: torch.Tensor, placeholder: torch.Tensor, prune: bool):
            return embed_and_mask(ids, placeholder, prune)
"""

BY_A_CALL = "_embed(ids, prune)"
SYNC_LINE = 14


def run(tmp_path, rebind=BY_A_CALL, include_cold=False):
    files = {"embed.py": EMBED.format(rebind=rebind), "model.py": MODEL}
    return lint_package(tmp_path, files, include_cold=include_cold)


def test_a_sync_only_when_a_call_replaced_the_saved_value_is_cold(tmp_path):
    assert SYNC_LINE not in lines(run(tmp_path), "pkg/embed.py")
    reason = cold_reasons(tmp_path, "pkg/embed.py")[SYNC_LINE]
    assert "runs only when a call replaced `ids` (it is no longer `original_ids`" in reason


def test_a_value_bound_again_by_a_plain_expression_stays_per_step(tmp_path):
    # `ids[1:]` is a new object every time: the test is true in every step
    assert SYNC_LINE in lines(run(tmp_path, rebind="torch.zeros(3), ids[1:]"), "pkg/embed.py")


def test_a_test_against_a_name_never_saved_stays_per_step(tmp_path):
    files = {"embed.py": EMBED.format(rebind=BY_A_CALL).replace("original_ids = ids", "original_ids = placeholder"),
             "model.py": MODEL}
    assert SYNC_LINE in lines(lint_package(tmp_path, files), "pkg/embed.py")
