"""An `assert`'s message is evaluated only when the assertion fails: an error path
(branches.py). SGLang 0.5.23's SWA component checks the pages it hands on with `assert
bool((physical > 0).all()), (f"... got {physical.tolist()}")`: the test syncs on every call, the
message's `.tolist()` only on the failure, which ends the process. Lines are the unit of
coldness, so only a message on lines of its own is cold. Small package: the helper in one
module, the per-step caller in another."""

from __future__ import annotations

from test_lint_scope import lint_package, where

PAGES = """
    import torch

    def bind_pages(table: torch.Tensor, pages: torch.Tensor) -> torch.Tensor:
        physical = table[pages]
        assert physical.numel() > 0, (
            f"pages must all be live, got {physical.tolist()}"
        )
        return physical
"""

MODEL = """
    import torch
    from torch import nn
    from pkg.pages import bind_pages

    class Layer(nn.Module):
        def forward(self, table: torch.Tensor, pages: torch.Tensor):
            return bind_pages(table, pages)
"""


def _lint(tmp_path, pages=PAGES):
    return where(lint_package(tmp_path, {"pages.py": pages, "model.py": MODEL}))


def test_an_assert_message_on_its_own_lines_is_an_error_path(tmp_path):
    # VALID: neither the `.tolist()` nor the caller's call is a per-step sync
    found = _lint(tmp_path)
    assert ("pkg/pages.py", 7, "SYN202") not in found, found
    assert not [f for f in found if f[0] == "pkg/model.py"], found


def test_a_message_sharing_a_line_with_code_that_runs_keeps_the_sync(tmp_path):
    # INVALID twins: the `.tolist()` in the test itself (it runs on every call), and a message
    # on the test's own line (the line runs whether the assertion fails or not)
    in_test = PAGES.replace("physical.numel() > 0", "len(physical.tolist()) > 0")
    one_line = PAGES.replace('assert physical.numel() > 0, (\n            f"pages must all be live, got {physical.tolist()}"\n        )',
                             'assert physical.numel() > 0, f"pages must all be live, got {physical.tolist()}"')
    for pages, line in ((in_test, 6), (one_line, 6)):
        assert pages != PAGES
        found = _lint(tmp_path, pages)
        assert ("pkg/pages.py", line, "SYN202") in found, (pages, found)
        assert [f for f in found if f[0] == "pkg/model.py"], found
