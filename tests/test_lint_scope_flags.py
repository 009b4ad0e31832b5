"""Issue 24, second pass on classes 1 and 3: a platform test kept in a field
(syncscope/lint/platform_fields.py), caches grown past a cached size and values kept once a
device or size matches (syncscope/lint/memo.py), and lazy set-up behind an `inited` flag that
returns early (syncscope/lint/initflags.py). Each VALID package is not reported by default (its
finding is cold with `include_cold`); each INVALID twin stays per-step."""

from __future__ import annotations

from test_lint_scope import lint_package, where
from test_lint_scope_once import cold_reasons

PLATFORMS = """
    class _Platform:
        def is_rocm(self) -> bool:
            return False

    current_platform = _Platform()
"""

# -- a platform test kept in a field ----------------------------------------------------------
FIELD = """
    import torch
    from pkg.platforms import current_platform

    class Dispatch(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.sync_comm = current_platform.is_rocm()

        def forward(self, x: torch.Tensor):
            self._sync_if_needed()
            return x

        def _sync_if_needed(self):
            if self.sync_comm:
                torch.cuda.current_stream().synchronize()
"""


def test_a_field_set_only_from_a_platform_test_carries_it(tmp_path):
    files = {"platforms.py": PLATFORMS, "moe.py": FIELD}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert list(cold) == [("pkg/moe.py", 16)], cold
    assert "self.sync_comm" in cold[("pkg/moe.py", 16)] and "is_rocm" in cold[("pkg/moe.py", 16)]


def test_a_field_also_set_from_anything_else_stays_unknown(tmp_path):
    # another method turns it on from a value no test decides: the sync may run on CUDA
    source = FIELD.replace("def forward(self, x: torch.Tensor):",
                           "def enable(self, on: bool):\n            self.sync_comm = on\n\n"
                           "        def forward(self, x: torch.Tensor):")
    run = lint_package(tmp_path, {"platforms.py": PLATFORMS, "moe.py": source})
    assert "SYN502" in [c for _, _, c in where(run)], where(run)


def test_a_field_stored_from_outside_the_class_stays_unknown(tmp_path):
    source = FIELD + """
    def make_synced():
        d = Dispatch()
        d.sync_comm = True
        return d
"""
    run = lint_package(tmp_path, {"platforms.py": PLATFORMS, "moe.py": source})
    assert "SYN502" in [c for _, _, c in where(run)], where(run)
