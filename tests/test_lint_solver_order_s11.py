"""The whole-program pass ends on a fixpoint whatever order it visits functions in (session 11).

`Solver.value` reads what a call on a field returns through `Program.given_method` (a field only
ever given one in-tree class), which is no call edge; the worklist requeued only the callers of
a call edge, and only when a summary's lengths changed. So a function computed before the
method it reads kept the method's first, empty summary: where the pool module's name sorted
first, `Holder.get` stayed a Python value, `total`'s parameter counted as fed host data, and
two real syncs were dropped; the same code with the module renamed reported them.
"""

from __future__ import annotations

import textwrap

import pytest

from syncscope.lint.config import load_config
from syncscope.lint.engine import lint_paths

USER = """
    import torch

    from pkg.{pool} import Pool


    class Holder:
        def __init__(self, pool: Pool):
            self.pool = pool

        def get(self):
            return self.pool.take()


    def total(values):
        return values.sum().item()


    class Model(torch.nn.Module):
        def forward(self, x, holder: Holder):
            return total(holder.get())
"""

POOL = """
    import torch


    class Pool:
        def take(self):
            return torch.zeros(3{device})
"""


def lint(tmp_path, pool: str, device: str) -> list[tuple]:
    (tmp_path / "pyproject.toml").write_text("[tool.syncscope.lint]\n")
    files = {"pkg/__init__.py": "", f"pkg/{pool}.py": POOL.format(device=device),
             "pkg/b_user.py": USER.format(pool=pool)}
    for name, source in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    run = lint_paths([str(tmp_path)], load_config(str(tmp_path)), use_cache=False, jobs=1)
    return sorted((f.site.path, f.site.line, f.code) for f in run.findings)


@pytest.mark.parametrize("pool", ["a_pool", "z_pool"])  # visited after / before `Holder.get`
def test_a_given_fields_device_result_reaches_the_helper_it_is_passed_to(tmp_path, pool):
    assert lint(tmp_path, pool, ', device="cuda"') == [("pkg/b_user.py", 16, "SYN201"),
                                                       ("pkg/b_user.py", 21, "SYN601")]


@pytest.mark.parametrize("pool", ["a_pool", "z_pool"])
def test_a_given_fields_host_result_is_host_data_for_the_helper(tmp_path, pool):
    assert lint(tmp_path, pool, "") == []
