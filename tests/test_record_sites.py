"""The recorder keeps what each call site needs once worked out (runtime/user_frames.py `sites`):
the stacks it gives must be those a fresh walk gives, site by site."""

from __future__ import annotations

import sys

from syncscope.runtime import user_frames
from syncscope.runtime.recorder import Recorder


def _record_two_lines(recorder: Recorder):
    first = recorder.record("item", "Tensor.item")
    second = recorder.record("tolist", "Tensor.tolist")
    return first, second


def _nested(recorder: Recorder, depth: int):
    if depth == 0:
        return recorder.record("item", "Tensor.item")
    return _nested(recorder, depth - 1)


def test_kept_sites_give_the_fresh_walks_stacks(tmp_path):
    recorder = Recorder(root=str(tmp_path))
    pairs = []
    for round_ in range(4):
        if round_ == 3:
            recorder._sites.clear()  # the last round works every frame out again
        pairs.append(_record_two_lines(recorder))
        assert recorder._sites  # kept
    for first, second in pairs:
        assert first.site.function == second.site.function == "_record_two_lines"
        assert second.site.line == first.site.line + 1  # each call site its own line
        assert first.stack[1:] == second.stack[1:]
    # Rounds 1 and 2 come from the kept sites; round 0 and round 3 were walked afresh.
    assert all(pair[0].stack == pairs[0][0].stack and pair[1].stack == pairs[0][1].stack for pair in pairs)
    walked = user_frames.user_stack(sys._getframe(0), recorder._internal, recorder._relative)
    assert walked[0].function == "test_kept_sites_give_the_fresh_walks_stacks"
    assert pairs[0][0].stack[1].function == walked[0].function


def test_the_same_function_at_other_depths_and_callers(tmp_path):
    recorder = Recorder(root=str(tmp_path))
    shallow = _nested(recorder, 1)
    deep = _nested(recorder, 4)
    assert [f.function for f in shallow.stack[:3]] == ["_nested"] * 2 + ["test_the_same_function_at_other_depths_and_callers"]
    assert [f.function for f in deep.stack[:6]] == ["_nested"] * 5 + ["test_the_same_function_at_other_depths_and_callers"]
    # The recursive call's line and the recording line differ: two sites of one code object.
    assert deep.stack[0].line != deep.stack[1].line
    assert deep.stack[1] == deep.stack[2] == shallow.stack[1]


def test_a_new_code_object_is_not_taken_for_a_kept_one(tmp_path):
    recorder = Recorder(root=str(tmp_path))
    namespace: dict = {}
    stacks = []
    for body in ("pass\n    return rec.record('item', 'x')", "return rec.record('item', 'x')"):
        exec(compile(f"def fn(rec):\n    {body}\n", str(tmp_path / "gen.py"), "exec"), namespace)
        stacks.append(namespace["fn"](recorder).site)
        del namespace["fn"]  # its code may be freed and its id reused by the next one
    assert [s.line for s in stacks] == [3, 2]
