"""A warning torch raises while syncscope handles the program's call points at the program's line,
and meets the program's filters, as under plain python (runtime/warning_sites.py)."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import syncscope  # noqa: E402
from syncscope.runtime import warning_sites  # noqa: E402


def _where(caught):
    return [(w.filename, w.lineno, w.category.__name__, str(w.message)[:40]) for w in caught]


def _on_both(program, action="default"):
    def run(device):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter(action)
            program(device)
        return _where(caught)

    plain = run("cpu")
    with syncscope.trap(device="sim"):
        simulated = run("cuda")
    return plain, simulated


def _softmax_three_times(device):
    x = torch.ones(2, 3, device=device)
    F.softmax(x)  # torch warns from Python with a stack level: the implicit-dim deprecation
    F.softmax(x)
    F.softmax(x)


def test_a_python_level_torch_warning_names_each_line_of_the_program():
    # F.softmax reaches the simulated device through torch's handle_torch_function hop and the
    # device's handlers; plain python's stack has neither
    plain, simulated = _on_both(_softmax_three_times)
    assert simulated == plain
    assert [line for _, line, *_ in plain] == sorted({line for _, line, *_ in plain}) and len(plain) == 3
    assert all(path == __file__ for path, *_ in simulated)


def test_a_once_filter_shows_it_once_for_the_program():
    plain, simulated = _on_both(_softmax_three_times, "once")
    assert simulated == plain and len(plain) == 1


def _copy_construct(device):
    x = torch.ones(2, device=device)
    torch.tensor(x)  # torch warns from C++ (TORCH_WARN), inside the simulated device's factory
    torch.tensor(x, device=device)


def test_a_cxx_warning_inside_the_simulated_device_names_the_program_line():
    plain, simulated = _on_both(_copy_construct, "always")
    assert simulated == plain and len(plain) == 2
    assert all(path == __file__ for path, *_ in simulated)


def test_the_program_filters_apply_to_its_module():
    def program(device):
        x = torch.ones(2, 3, device=device)
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message="Implicit dimension", module=__name__)
            with pytest.raises(UserWarning, match="Implicit dimension"):
                F.softmax(x)
            warnings.filterwarnings("ignore", module=__name__)
            with warnings.catch_warnings(record=True) as caught:
                F.softmax(x)
            assert caught == []

    program("cpu")
    with syncscope.trap(device="sim"):
        program("cuda")


def test_the_route_is_taken_out_with_the_trap():
    before_hook, before_filters = warnings._showwarnmsg, list(warnings.filters)
    with syncscope.trap(device="sim"):
        assert warnings._showwarnmsg is warning_sites._showwarnmsg
        assert warnings.filters[0] == warning_sites._FILTER
    assert warnings._showwarnmsg is before_hook
    assert warnings.filters == before_filters


def test_a_warning_of_syncscope_outside_a_program_call_is_left_alone():
    # located in a runtime module with no program frame above it: shown as it was raised
    with syncscope.trap(device="sim"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.warn_explicit("from nowhere", UserWarning, warning_sites.__file__, 1)
    assert _where(caught) == [(warning_sites.__file__, 1, "UserWarning", "from nowhere")]


def test_the_cuda_detectors_own_sync_warning_is_left_on_its_channel():
    # torch's sync-debug warning raised inside a shim is how the CUDA detector learns of a sync:
    # it never reaches the program, so it is not re-located (no cost per sync)
    from syncscope.events import SYNC_WARNING

    for shim_file in warning_sites._CUDA_DETECTORS:  # the shim detector's and the quiet one's wrappers
        assert warning_sites._detector_channel(warnings.WarningMessage(UserWarning(SYNC_WARNING), UserWarning, shim_file, 1))
        assert not warning_sites._detector_channel(warnings.WarningMessage(UserWarning("Sparse CSR"), UserWarning, shim_file, 1))
