"""The CUDA detectors' install reads every original before it sets any shim (runtime/cuda.py).

A read of a class attribute between two changes to the class gives it a new version tag, and from
Python 3.13 a class that has used 1000 tags never gets one again: its instances' attribute and
method reads stay uncached for the rest of the process. Monitor mode installs the detector around
every sampled region, so an install that read and set attribute by attribute spent ~20 of
torch.Tensor's tags a cycle and ran it out after ~48 cycles (docs/runtime.md). The owner here
records, through its metaclass, each read and change of the attributes the detector wraps.
"""

import pytest

torch = pytest.importorskip("torch")

from syncscope.events import SyncKind as K  # noqa: E402
from syncscope.runtime import cuda  # noqa: E402
from syncscope.runtime.cuda_kinds import _fixed  # noqa: E402
from syncscope.runtime.quiet_cuda import QuietCudaDetector  # noqa: E402
from syncscope.runtime.recorder import Recorder  # noqa: E402

_NAMES = ("item", "nonzero", "__bool__", "tolist")
_events: list = []


class _Recording(type):
    def __getattribute__(cls, name):
        if name in _NAMES:
            _events.append(("read", name))
        return super().__getattribute__(name)

    def __setattr__(cls, name, value):
        _events.append(("change", name))
        super().__setattr__(name, value)

    def __delattr__(cls, name):
        _events.append(("change", name))
        super().__delattr__(name)


class _Owner(metaclass=_Recording):
    def item(self):
        return 1

    def nonzero(self):
        return 2

    def __bool__(self):
        return True

    def tolist(self):
        return [3]


@pytest.fixture
def debug_mode(monkeypatch):
    """A CPU build has no sync-debug mode; the install switches it, so it is stood in for."""
    mode = [0]
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: mode[0])
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", lambda value: mode.__setitem__(0, value))
    return mode


@pytest.mark.parametrize("make", [cuda.CudaDetector, QuietCudaDetector], ids=["shims", "quiet"])
def test_install_reads_every_original_before_it_changes_the_class(make, debug_mode):
    detector = make()
    detector._specs = [cuda.ShimSpec(_Owner, name, f"_Owner.{name}", _fixed(K.ITEM)) for name in _NAMES]
    _events.clear()
    detector.install(Recorder(device="cuda"))
    try:
        kinds = [kind for kind, _name in _events]
        assert kinds.count("read") == len(_NAMES) and kinds.count("change") == len(_NAMES)
        assert "read" not in kinds[kinds.index("change"):]  # no read of the class once it has changed
        assert debug_mode[0] == "warn"
        owner = _Owner()
        assert _Owner.__dict__["item"] is not None and getattr(_Owner.item, "__wrapped__", None) is not None
        assert owner.item() == 1 and owner.nonzero() == 2 and bool(owner) and owner.tolist() == [3]  # through the shims
    finally:
        _events.clear()
        detector.uninstall()
    assert [kind for kind, _name in _events] == ["change"] * len(_NAMES)  # put back in a row, nothing read between
    assert not hasattr(_Owner.item, "__wrapped__") and _Owner().item() == 1
    assert debug_mode[0] == 0
