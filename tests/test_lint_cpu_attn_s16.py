"""Code that never runs on CUDA, session 16 (branch `v-cpuattn`): the CPU's attention backend by
name, and a flag set true only there.

* `self.backend_name in ["CPU_ATTN"]`: a string whose words are `cpu` and `attn` / `attention`,
  compared with a name that is a backend's or implementation's by its words, names the attention
  backend the CPU platform picks: false on a CUDA GPU (comparetests.py). `in` / `not in` a
  literal list of such names counts the same.
* A field stored only `True` / `False` literals, every `True` in an arm a CUDA GPU never takes,
  and `False` at least once, is false while serving: `assert self.flag` cuts what follows,
  `if self.flag:` skips its body (held_tests.py).
INVALID twins: `"cpu"` alone (a host offload), a name that is no backend's (`device`, a tensor
field), a second `True` store on a live line, a flag never stored `False`, a flag stored from
another receiver, a flag set true during CUDA-graph capture (which runs, once).
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

WORKER = """
    import torch

    class Worker(torch.nn.Module):
        def __init__(self, backend_name: str, remote: str):
            super().__init__()
            self.backend_name = backend_name
            self.slots = torch.zeros(8, device="cuda")
            self.post_process = False
            if remote != self.backend_name and {test}:
                self.post_process = True
            {more}

        def forward(self, x: torch.Tensor):
            if self.post_process:
                n = self.slots.sum().item()
            self.fix_up()
            return x

        def fix_up(self):
            assert self.post_process
            return self.slots.tolist()
"""
LINES = (16, 22)  # the `.item()` under `if self.post_process:`, the `.tolist()` after the assert


def _cold(run) -> dict[int, str]:
    return {f.site.line: f.cold for f in run.findings if f.site.path == "pkg/worker.py" and f.cold}


def _lint(tmp_path, test: str, more: str = "pass", cold: bool = True):
    source = WORKER.format(test=test, more=more)
    return lint_package(tmp_path, {"worker.py": source}, include_cold=cold)


def test_a_flag_set_only_for_the_cpu_attention_backend_is_false_on_cuda(tmp_path):
    for test in ('self.backend_name in ["CPU_ATTN"]', 'self.backend_name == "cpu_attention"',
                 'self.backend_name in ("CPU_ATTN", "npu_attn")'):
        cold = _cold(_lint(tmp_path, test))
        for line in LINES:
            assert "set true only where CUDA never runs" in cold.get(line, ""), (test, line, cold)
        assert "another platform's backend" in cold[LINES[0]], cold


def test_not_in_the_cpu_attention_backends_is_true_on_cuda(tmp_path):
    # `not in`: the arm is taken on CUDA, so the store is live and the flag stays unknown
    found = where(_lint(tmp_path, 'self.backend_name not in ["CPU_ATTN"]', cold=False))
    assert any(f[1] == LINES[0] for f in found), found


def test_cpu_alone_or_a_name_that_is_no_backend_stays(tmp_path):
    # `"cpu"` alone is a host offload a CUDA server chooses; `self.kind` names no backend
    for test in ('self.backend_name == "cpu"', 'remote == "cpu_attn"', 'self.backend_name in ["CPU_ATTN", "FLASH_ATTN"]'):
        found = where(_lint(tmp_path, test, cold=False))
        assert any(f[1] == LINES[0] for f in found), (test, found)
        assert any(f[1] == LINES[1] for f in found), (test, found)


def test_a_flag_also_set_true_on_a_live_line_stays(tmp_path):
    more = "if remote: self.post_process = True"
    found = where(_lint(tmp_path, 'self.backend_name in ["CPU_ATTN"]', more=more, cold=False))
    assert any(f[1] == LINES[0] for f in found), found


def test_a_flag_stored_from_another_receiver_stays(tmp_path):
    source = WORKER.format(test='self.backend_name in ["CPU_ATTN"]', more="pass") + """
    def enable(worker):
        worker.post_process = True
"""
    found = where(lint_package(tmp_path, {"worker.py": source}))
    assert any(f[1] == LINES[0] for f in found), found


def test_a_flag_never_stored_false_stays(tmp_path):
    source = WORKER.format(test='self.backend_name in ["CPU_ATTN"]', more="pass").replace(
        "self.post_process = False", "self.post_process = remote == 'x'")
    found = where(lint_package(tmp_path, {"worker.py": source}))
    assert any(f[1] == LINES[0] for f in found), found


def test_a_flag_set_true_during_graph_capture_stays(tmp_path):
    # the capture runs (once, at start-up): the `True` it stores holds in the replays after it
    source = WORKER.format(test='torch.cuda.is_current_stream_capturing()', more="pass")
    found = where(lint_package(tmp_path, {"worker.py": source}))
    assert any(f[1] == LINES[0] for f in found), found
