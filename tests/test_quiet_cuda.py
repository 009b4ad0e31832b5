"""The quiet CUDA detector's pieces on the CPU (runtime/quiet_cuda.py, subscripts.py, site_timer.py).

torch's sync warning needs a GPU; a CPU build raises a C++ warning from inside a subscript too
("indexing with dtype torch.uint8 is now deprecated"), through the same path (buffered in C++,
flushed to Python before the binding returns). With the detector's trigger text set to that
warning's, the CPU run exercises what a sync does on the GPU: the frame stopped at the
subscript, its operands read back from the code, the instruction armed and the next one timed.
"""

import sys
import warnings

import pytest

from syncscope.runtime import subscripts
from syncscope.runtime.site_timer import AVAILABLE as MONITORING


class _Fake:
    """Stands for a tensor: `cuda` and `mask` say what the detector would read from metadata."""

    def __init__(self, cuda, mask):
        self.cuda, self.mask = cuda, mask
        self.seen = []

    def __getitem__(self, index):
        self.seen.append(_read(sys._getframe(1)))
        return self

    def __setitem__(self, index, value):
        self.seen.append(_read(sys._getframe(1)))

    def __gt__(self, other):
        return _Fake(self.cuda, True)

    def __mul__(self, other):
        return _Fake(self.cuda, False)


def _describe(value):
    return (value.cuda, value.mask) if isinstance(value, _Fake) else None


def _read(frame):
    found = subscripts.subscript_at(frame)
    if found is None:
        return None
    values = [subscripts.resolve(e, frame, _describe) for e in (found.container, found.index, found.value)]
    return (frame.f_lineno - FIRST, found.store, *values)


class _Holder:
    pass


def _forms(x, gpu_mask, cpu_mask, pageable, t, flag):
    x[gpu_mask]  # 1
    x[gpu_mask] = x[:8] * 2  # 2
    x[cpu_mask] = 1.0  # 3
    x[0:16] = pageable  # 4
    x[3] = 5.0  # 5
    x[:, gpu_mask]  # 6
    t.v[t.v > 0]  # 7
    x[[1, 2]]  # 8
    x[gpu_mask if flag else cpu_mask]  # 9: either mask, so unknown
    for i in range(2):
        x[i, gpu_mask]  # 11
    return t.v[  # 12
        t.v > 0
    ]


FIRST = _forms.__code__.co_firstlineno


def test_subscript_operands_are_read_back_from_the_code():
    x, gm, cm, pg = _Fake(True, False), _Fake(True, True), _Fake(False, True), _Fake(False, False)
    holder = _Holder()
    holder.v = _Fake(True, False)
    _forms(x, gm, cm, pg, holder, True)
    mask = subscripts.Tensorish(cuda=True, mask=True)
    seen = x.seen + holder.v.seen
    by_line = {}
    for entry in seen:
        by_line.setdefault(entry[0], []).append(entry)
    assert by_line[1] == [(1, False, x, gm, None)]
    assert (2, True, x, gm, subscripts.Tensorish(cuda=True, mask=False)) in by_line[2]  # the value: x[:8] * 2
    assert by_line[3] == [(3, True, x, cm, 1.0)]
    assert by_line[4] == [(4, True, x, slice(0, 16), pg)]
    assert by_line[5] == [(5, True, x, 3, 5.0)]
    assert by_line[6] == [(6, False, x, (slice(None), gm), None)]
    assert by_line[7] == [(7, False, holder.v, mask, None)]
    assert by_line[8] == [(8, False, x, [1, 2], None)]
    assert by_line[9] == [(9, False, x, None, None)]
    assert by_line[11] == [(11, False, x, (0, gm), None), (11, False, x, (1, gm), None)]
    assert by_line[12] == [(12, False, holder.v, mask, None)]


def test_a_property_is_never_called_to_read_an_operand():
    calls = []

    class Lazy:
        @property
        def mask(self):
            calls.append(1)
            return _Fake(True, True)

    x, holder = _Fake(True, False), Lazy()
    x[holder.mask]
    assert calls == [1]  # the program's own read
    assert x.seen == [(x.seen[0][0], False, x, None, None)]


def _quiet_detector(monkeypatch, trigger):
    torch = pytest.importorskip("torch")
    from syncscope.runtime import cuda
    from syncscope.runtime.quiet_cuda import QuietCudaDetector
    from syncscope.runtime.recorder import Recorder

    monkeypatch.setattr(cuda, "_set_debug_mode_quietly", lambda mode: None)
    monkeypatch.setattr(cuda, "SYNC_WARNING", trigger)
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: 0)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    detector = QuietCudaDetector()
    recorder = Recorder(device="cuda")
    return torch, detector, recorder


def test_an_unwrapped_subscript_that_warns_is_named_timed_from_its_second_run(monkeypatch):
    torch, detector, recorder = _quiet_detector(monkeypatch, "indexing with dtype torch.uint8")
    x = torch.arange(4.0)
    host_mask = torch.tensor([1, 0, 1, 0], dtype=torch.uint8)

    def gather(n):
        for _ in range(n):
            x[host_mask]  # the line

    line = gather.__code__.co_firstlineno + 2
    before = {name: vars(torch.Tensor).get(name) for name in ("__getitem__", "__setitem__", "to")}
    with warnings.catch_warnings():
        detector.install(recorder)
        try:
            warnings.filterwarnings("always", message="indexing with dtype")
            detector.rearm()
            assert vars(torch.Tensor).get("__getitem__") is before["__getitem__"]  # not wrapped
            assert vars(torch.Tensor).get("__setitem__") is before["__setitem__"]
            assert getattr(torch.Tensor.to, "__wrapped__", None) is not None  # the slim copy wrapper
            gather(3)
            x[1:3]  # no warning: nothing recorded
        finally:
            detector.uninstall()
    assert [(e.kind, e.api, e.site.line) for e in recorder.events] == [("host_index", "Tensor.__getitem__", line)] * 3
    assert recorder.events[0].blocked_ns is None  # the first at an instruction: no time
    if MONITORING:
        assert all(e.blocked_ns is not None and e.blocked_ns > 0 for e in recorder.events[1:])
    else:  # Python 3.11 has no sys.monitoring (trap() uses the shim detector there)
        assert all(e.blocked_ns is None for e in recorder.events)
    assert {name: vars(torch.Tensor).get(name) for name in before} == before


@pytest.mark.skipif(not MONITORING, reason="sys.monitoring is Python 3.12+")
def test_the_site_timer_times_only_armed_instructions():
    import time

    from syncscope.runtime.site_timer import SiteTimer

    timer = SiteTimer()
    assert timer.install()
    waits = []

    def hook(message, category, filename, lineno, file=None, line=None):
        frame = sys._getframe(1)
        while frame.f_code.co_filename.endswith("warnings.py"):
            frame = frame.f_back
        offset = subscripts.instruction_offset(frame)
        start = timer.started_ns(frame.f_code, offset)
        waits.append((frame.f_lineno, None if start is None else time.perf_counter_ns() - start))
        timer.arm(frame.f_code, offset)

    def invert(n, flag):
        for _ in range(n):
            ~flag  # Python 3.12 warns (DeprecationWarning) from C, as torch does
        ~flag  # a second site

    first = invert.__code__.co_firstlineno
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = hook
            invert(3, True)
            invert(1, True)
    finally:
        timer.uninstall()
    assert [line - first for line, _ in waits] == [2, 2, 2, 3, 2, 3]
    assert [wait is None for _, wait in waits] == [True, False, False, True, False, False]


@pytest.mark.skipif(not MONITORING, reason="sys.monitoring is Python 3.12+")
def test_armed_instructions_stay_armed_across_installs():
    # Monitor mode installs the same detector for each sampled run: a site timed in one run is
    # timed from the first sync of the next.
    import time

    from syncscope.runtime.site_timer import SiteTimer

    timer = SiteTimer()
    waits = []

    def hook(message, category, filename, lineno, file=None, line=None):
        frame = sys._getframe(1)
        while frame.f_code.co_filename.endswith("warnings.py"):
            frame = frame.f_back
        offset = subscripts.instruction_offset(frame)
        start = timer.started_ns(frame.f_code, offset)
        waits.append(start is not None)
        timer.arm(frame.f_code, offset)

    def invert(flag):
        return ~flag

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = hook
        for _ in range(2):
            assert timer.install()
            try:
                invert(True)
                invert(True)
            finally:
                timer.uninstall()
        invert(True)  # uninstalled: nothing notes a start
        time.sleep(0)
    assert waits == [False, True, True, True, False]


def test_a_blocking_copy_through_a_slim_wrapper_is_named_by_its_own_wrapper(monkeypatch):
    # The three slim wrappers (to, cuda, copy_) share one code object: the warning route must read
    # which one it is from the frame, not from the code (it named a `.to()` `Tensor.copy_` on the
    # H100). torch warns "Casting complex values to real" from inside the copy, once a process:
    # in a child, so that no other test has used it up.
    pytest.importorskip("torch")
    import subprocess

    code = """
import warnings, torch
from tests.test_quiet_cuda import _quiet_detector

class Patch:
    def setattr(self, owner, name, value):
        setattr(owner, name, value)

torch, detector, recorder = _quiet_detector(Patch(), "Casting complex values to real")
z = torch.tensor([1 + 1j, 2 - 1j])
with warnings.catch_warnings():
    detector.install(recorder)
    try:
        warnings.filterwarnings("always", message="Casting complex")
        detector.rearm()
        z.to(torch.float32)  # the line
    finally:
        detector.uninstall()
print([(e.api, e.kind, e.site.line, e.blocked_ns is not None and e.blocked_ns > 0) for e in recorder.events])
"""
    line = code.splitlines().index("        z.to(torch.float32)  # the line") + 1
    root = __file__.rsplit("/tests/", 1)[0]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == str([("Tensor.to", "other", line, True)]), out.stdout  # timed from its first sync


def test_an_unwrapped_subscript_is_named_as_the_shim_names_it():
    # The catalog's subscripts (tests/catalog/sync_catalog.py) and the line form of a mask over
    # lines, on tensors that say they are on the device (a subclass: this CPU build has none).
    # The two the H100 run named `other` at first: a device mask with a computed value stored,
    # and a mask compared from a class attribute.
    torch = pytest.importorskip("torch")
    from syncscope.runtime import quiet_cuda

    class OnDevice(torch.Tensor):
        @property
        def is_cuda(self):
            return True

    kinds = []

    class Grab:
        def __getitem__(self, index):
            frame = sys._getframe(1)
            kinds.append(quiet_cuda._subscript_kind(subscripts.subscript_at(frame), frame))

        def __setitem__(self, index, value):
            frame = sys._getframe(1)
            kinds.append(quiet_cuda._subscript_kind(subscripts.subscript_at(frame), frame))

    class T:
        v = torch.tensor([1.0, -1.0]).as_subclass(OnDevice)

    y = Grab()
    x = torch.arange(16.0).as_subclass(OnDevice)
    gpu_mask = (torch.arange(16) > 7).as_subclass(OnDevice)
    cpu_mask, cpu_long, pageable = torch.arange(16) > 7, torch.tensor([1, 3]), torch.ones(16)
    y[gpu_mask]
    y[gpu_mask] = x[:8] * 2
    y[cpu_mask] = 1.0
    y[cpu_long]
    y[0:16] = pageable
    y[3] = 5.0
    y[
        T.v > 0
    ]
    y[[1, 2]]
    y[x.long()]  # a call: not read back
    assert kinds == ["bool_mask_index", "bool_mask_index", "host_index", "host_index", "h2d_copy", "scalar_store",
                     "bool_mask_index", "host_index", "other"]


def test_the_quiet_detectors_subscript_kinds_agree_with_the_simulated_device_on_the_catalog_and_line_forms():
    # The simulated device names each sync as the GPU does (tests/test_sim_catalog.py, the parity
    # suite). At each subscript sync it records, the program's frame is stopped at the subscript,
    # as it is when torch's warning reaches the quiet detector on a GPU: the kind read back from
    # that frame must be the simulated device's.
    pytest.importorskip("torch")
    import syncscope
    from syncscope.runtime import quiet_cuda
    from syncscope.runtime.recorder import Recorder
    from tests import line_forms
    from tests.catalog.sync_catalog import run_catalog
    from tests.test_line_attribution import _tensors

    files = ("sync_catalog.py", "line_forms.py")
    compared = []
    record = Recorder.record

    def checking(self, kind, api, **kwargs):
        if api in ("Tensor.__getitem__", "Tensor.__setitem__"):
            frame = sys._getframe(1)
            while frame is not None and not frame.f_code.co_filename.endswith(files):
                frame = frame.f_back
            found = subscripts.subscript_at(frame) if frame is not None else None
            if found is not None:
                compared.append((frame.f_code.co_filename.rsplit("/", 1)[-1], frame.f_lineno, kind,
                                 quiet_cuda._subscript_kind(found, frame)))
        return record(self, kind, api, **kwargs)

    Recorder.record = checking
    try:
        with syncscope.trap(device="sim"):
            run_catalog("cuda")
            tensors = _tensors("cuda")
            for form in line_forms.FORMS:
                if form.__name__ not in ("form_compiled_function",):
                    form(tensors)
    finally:
        Recorder.record = record
    catalog = [c for c in compared if c[0] == "sync_catalog.py"]
    assert len(catalog) >= 6, compared  # the catalog's six subscript syncs at least
    assert [c for c in compared if c[2] != c[3]] == [], compared
