"""Issue 24, rare events (branch r-rare4): a test that names a rare event (preemption,
retraction, expert rebalancing, trying to recover a rank) is false in an ordinary step, a
function named for one runs only on it, and a block that resets a counter it is tested on runs
once every so many calls. Each VALID package is not reported by default (its finding is cold
with `include_cold`); each INVALID twin stays."""

from __future__ import annotations

from test_lint_scope import lint_package, where
from test_lint_scope_once import cold_reasons

# -- a test that names a rare event --------------------------------------------------------
EVENT_TEST = """
    import torch

    class Offload:
        def __init__(self):
            self.events = []

        def flush(self):
            for event in self.events:
                event.synchronize()

    class Runner(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.offload = Offload()

        def forward(self, x: torch.Tensor, meta):
            if {test}:
                self.offload.flush()
            return x
"""


def test_a_branch_on_a_rare_event_is_cold(tmp_path):
    files = {"runner.py": EVENT_TEST.format(test="meta.preempted_req_ids")}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert "names an event that is no ordinary step (`preempted`)" in cold[("pkg/runner.py", 19)], cold
    assert cold[("pkg/runner.py", 10)] == "not reached from a per-step root", cold


def test_a_while_on_a_retracted_queue_and_a_recovery_call_are_cold(tmp_path):
    for index, test in enumerate(("meta.retracted_queue", "meta.ranks and try_recover_ranks(meta.ranks)")):
        files = {"runner.py": EVENT_TEST.format(test=test)}
        (tmp_path / str(index)).mkdir()
        assert where(lint_package(tmp_path / str(index), files)) == [], test


def test_a_switch_that_names_an_event_stays(tmp_path):
    # a feature switch (`enable_...`) says nothing of how often the event happens
    files = {"runner.py": EVENT_TEST.format(test="meta.enable_priority_preemption")}
    found = where(lint_package(tmp_path, files))
    assert ("pkg/runner.py", 10, "SYN503") in found, found
    assert ("pkg/runner.py", 19, "SYN602") in found, found


def test_an_ordinary_flag_stays(tmp_path):
    files = {"runner.py": EVENT_TEST.format(test="meta.need_sync")}
    found = where(lint_package(tmp_path, files))
    assert ("pkg/runner.py", 10, "SYN503") in found, found
    assert ("pkg/runner.py", 19, "SYN602") in found, found


# -- a function named for a rare event ------------------------------------------------------
EVENT_FUNCTION = """
    import torch

    class Batch:
        def __init__(self, seq_lens: torch.Tensor):
            self.seq_lens = seq_lens.cuda()

        def {name}(self):
            order = self.seq_lens.argsort().tolist()
            return order

    class Scheduler:
        def step(self, batch: Batch):
            return batch.{name}()
"""


def test_a_function_named_for_a_rare_event_is_cold_and_not_followed(tmp_path):
    files = {"sched.py": EVENT_FUNCTION.format(name="retract_decode")}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert "runs only on an event that is no ordinary step (`retract`)" in cold[("pkg/sched.py", 9)], cold


def test_a_function_that_asks_whether_the_event_happened_stays(tmp_path):
    # `maybe_...` runs every step to find out: its own work is per step
    files = {"sched.py": EVENT_FUNCTION.format(name="maybe_rebalance_experts")}
    found = where(lint_package(tmp_path, files))
    assert ("pkg/sched.py", 9, "SYN202") in found, found
    assert ("pkg/sched.py", 14, "SYN602") in found, found


def test_recovered_tokens_are_no_recovery_event(tmp_path):
    # speculative decoding samples "recovered" tokens in every step
    files = {"sched.py": EVENT_FUNCTION.format(name="sample_recovered_tokens")}
    found = where(lint_package(tmp_path, files))
    assert ("pkg/sched.py", 9, "SYN202") in found, found


# -- a block that resets the counter it is tested on ----------------------------------------
PERIODIC = """
    import torch

    class Balancer:
        def __init__(self, interval: int):
            self.count = 0
            self.interval = interval
            self.load = torch.zeros(8, device="cuda")

        def step(self):
            self.count += 1
            if self.count {op} self.interval:
                {reset}
                plan = self.load.argsort().tolist()
                return plan
            return None
"""


def test_a_block_that_resets_its_counter_runs_once_per_interval(tmp_path):
    files = {"balancer.py": PERIODIC.format(op=">=", reset="self.count = 0")}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert "runs once every `self.interval` calls" in cold[("pkg/balancer.py", 14)], cold


def test_a_threshold_without_a_reset_stays(tmp_path):
    # no reset: once past the limit, the block runs in every call
    files = {"balancer.py": PERIODIC.format(op=">=", reset="self.interval = self.interval")}
    found = where(lint_package(tmp_path, files))
    assert ("pkg/balancer.py", 14, "SYN202") in found, found


def test_an_equality_test_is_no_period(tmp_path):
    files = {"balancer.py": PERIODIC.format(op="==", reset="self.count = 0")}
    found = where(lint_package(tmp_path, files))
    assert ("pkg/balancer.py", 14, "SYN202") in found, found


# -- the switch of a debug tool -------------------------------------------------------------
TOOL = """
    import torch

    class {cls}:
        def __init__(self, components):
            self.enabled = bool(components)
            self.pending = []

        def observe(self, stamp: torch.Tensor):
            if not self.enabled:
                return
            self.pending.append(stamp.cuda().item())

    class Runner(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tool = {cls}(components=set())

        def forward(self, x: torch.Tensor):
            self.tool.observe(x)
            return x
"""


def test_the_enabled_switch_of_a_debug_tool_is_off(tmp_path):
    files = {"runner.py": TOOL.format(cls="StepInfoDumper")}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert "a debug tool: off unless turned on" in cold[("pkg/runner.py", 12)], cold


def test_the_enabled_switch_of_another_object_stays(tmp_path):
    files = {"runner.py": TOOL.format(cls="StepOffloader")}
    found = where(lint_package(tmp_path, files))
    assert ("pkg/runner.py", 12, "SYN201") in found, found
    assert ("pkg/runner.py", 20, "SYN601") in found, found


# -- the server being idle ------------------------------------------------------------------
IDLE = """
    import torch

    class Pool:
        def __init__(self):
            self.free_slots = torch.arange(16, device="cuda")

    class Scheduler:
        def __init__(self):
            self.pool = Pool()

        def {checker}(self):
            return not self.queue

        def housekeeping(self):
            idle = self.{checker}()
            if not idle:
                return
            free = set(self.pool.free_slots.tolist())
            return free

        def event_loop_normal(self):
            while True:
                self.housekeeping()
"""


def test_housekeeping_when_the_server_is_fully_idle_is_cold(tmp_path):
    files = {"sched.py": IDLE.format(checker="is_fully_idle")}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert "(`fully_idle`)" in cold[("pkg/sched.py", 19)], cold


def test_an_idle_batch_is_a_step(tmp_path):
    # `is_idle()` of a batch: a DP-attention rank runs one while the others serve
    files = {"sched.py": IDLE.format(checker="is_idle")}
    found = where(lint_package(tmp_path, files))
    assert ("pkg/sched.py", 19, "SYN202") in found, found
    assert ("pkg/sched.py", 24, "SYN602") in found, found


# -- the operands after a decided one are not evaluated -------------------------------------
SHORT = """
    import torch

    class State:
        def __init__(self):
            self.rebalanced = False
            self.flag = torch.zeros(1, device="cuda")

        def ready(self) -> bool:
            return bool(self.flag.item())

    class Balancer:
        def __init__(self):
            self.state = State()

        def step(self):
            if self.state.{name} and self.state.ready():
                return 1
            return 0
"""


def test_an_operand_after_a_false_one_is_not_evaluated(tmp_path):
    files = {"balancer.py": SHORT.format(name="rebalanced")}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert cold[("pkg/balancer.py", 10)] == "not reached from a per-step root", cold


def test_an_operand_after_an_unknown_one_is_evaluated(tmp_path):
    files = {"balancer.py": SHORT.format(name="pending")}
    found = where(lint_package(tmp_path, files))
    assert ("pkg/balancer.py", 10, "SYN201") in found, found
    assert ("pkg/balancer.py", 17, "SYN602") in found, found


def test_work_after_a_scaling_check_is_cold(tmp_path):
    # `if not Manager.is_scaling(): return`: the rest runs only while the EP group is rescaled
    source = IDLE.format(checker="is_scaling").replace("if not idle:", "if not scaling:")
    files = {"sched.py": source.replace("idle = ", "scaling = ")}
    assert "if not scaling:" in files["sched.py"]
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert "(`is_scaling`)" in cold[("pkg/sched.py", 19)], cold


def test_rope_scaling_is_no_event(tmp_path):
    files = {"runner.py": EVENT_TEST.format(test="meta.rope_scaling")}
    found = where(lint_package(tmp_path, files))
    assert ("pkg/runner.py", 10, "SYN503") in found, found
