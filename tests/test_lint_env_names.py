"""A module global or a local bound once to an environment switch's test keeps the switch
(env_names.py, for env_switches.py).

SGLang 0.5.23's GDN decode fusion check: `_fused_decode_verify_real_tensors =
envs.SGLANG_GDN_DECODE_FUSION_VERIFY_REAL_TENSORS.get()` at module level (`EnvBool(False)`,
never set), `verify_real_tensors = _fused_decode_verify_real_tensors and layer.layer_id not in
...` in `forward_decode`, then `if verify_real_tensors:` around `.item()`s that compare the
fused kernel with a reference. The readers judged them `R, debug` (7 verdicts): the test reads
the switch through two names, which env_switches did not follow. VALID: the global read directly,
and through a local. INVALID twins: a switch on by default, a global bound twice, rebound in a
function through `global`, stored from another module or by `setattr`, and a local bound twice:
the sync stays per step.
"""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

from lint_helpers import env_module

ENVIRON = env_module("PKG_VERIFY_FUSION")

BACKEND = """
    import torch
    from torch import nn
    from pkg.environ import envs

    _verify = envs.{switch}.get()
    _verified: set = set()
{rebind}

    class Backend(nn.Module):
        def forward(self, x: torch.Tensor, layer_id: int):
            {test}
                return int(x.sum().item())
            return x
"""

LOCAL = "check = _verify and layer_id not in _verified\n            if check:"
DIRECT = "if _verify:"
SYNC = 14


def flagged(tmp_path, switch="PKG_VERIFY_FUSION", rebind="", test=LOCAL, extra=None):
    files = {"environ.py": ENVIRON, "backend.py": BACKEND.format(switch=switch, rebind=rebind, test=test)}
    files.update(extra or {})
    return lines(lint_package(tmp_path, files), "pkg/backend.py")


def test_a_local_bound_to_a_global_kept_from_an_off_switch_is_off(tmp_path):
    assert flagged(tmp_path) == []
    files = {"environ.py": ENVIRON, "backend.py": BACKEND.format(switch="PKG_VERIFY_FUSION", rebind="", test=LOCAL)}
    run = lint_package(tmp_path, files, include_cold=True)
    reasons = [str(f.cold) for f in run.findings if f.site.path.endswith("backend.py")]
    assert reasons and all("PKG_VERIFY_FUSION" in why and "_verify" in why for why in reasons)


def test_the_global_read_directly_is_off_too(tmp_path):
    assert flagged(tmp_path, test=DIRECT) == []


def test_a_switch_on_by_default_keeps_the_sync(tmp_path):
    assert flagged(tmp_path, switch="PKG_OTHER") == [SYNC]


def test_a_global_bound_twice_keeps_the_sync(tmp_path):
    assert flagged(tmp_path, rebind="    _verify = True\n") == [SYNC + 1]


def test_a_global_rebound_in_a_function_keeps_the_sync(tmp_path):
    rebind = "    def enable():\n        global _verify\n        _verify = True\n"
    assert flagged(tmp_path, rebind=rebind) == [SYNC + 3]


def test_a_global_stored_from_another_module_keeps_the_sync(tmp_path):
    extra = {"launch.py": """
        import pkg.backend as backend

        def launch():
            backend._verify = True
    """}
    assert flagged(tmp_path, extra=extra) == [SYNC]


def test_a_global_given_by_setattr_keeps_the_sync(tmp_path):
    extra = {"launch.py": """
        import pkg.backend as backend

        def launch():
            setattr(backend, "_verify", True)
    """}
    assert flagged(tmp_path, extra=extra) == [SYNC]


def test_a_local_bound_twice_keeps_the_sync(tmp_path):
    test = "check = _verify and layer_id not in _verified\n            check = layer_id > 0\n            if check:"
    assert flagged(tmp_path, test=test) == [SYNC + 1]


def test_a_local_shadowing_the_global_keeps_the_sync(tmp_path):
    test = "_verify = layer_id > 0\n            if _verify:"
    assert flagged(tmp_path, test=test) == [SYNC]
