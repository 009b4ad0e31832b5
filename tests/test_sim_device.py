"""The simulated CUDA device: an unmodified CUDA program runs on the CPU, with CPU eager's numbers,
and reports the syncs a GPU would have had; the non_blocking read-before-sync hazard; clear errors
for what cannot be simulated; torch restored on uninstall."""

from __future__ import annotations

import os
import threading

import pytest
import torch
import torch.nn.functional as F

import syncscope
from syncscope.events import SyncKind as K
from syncscope.runtime.sim import SimulatedCudaTensor, SimulatedDeviceError
from tests.marked_lines import events_in, marked_line
from tests.sim_grad_modes import grad_mode  # noqa: F401

HERE = os.path.basename(__file__)
pytestmark = pytest.mark.usefixtures("grad_mode")


def _line(marker: str) -> int:
    return marked_line(__file__, marker)


def _mine(events):
    return events_in(events, __file__)


# -- the device as a program sees it ---------------------------------------------------------------
def test_cuda_surface_answers_like_one_gpu():
    with syncscope.trap(device="sim") as t:
        # two simulated GPUs by default (SYNCSCOPE_SIM_DEVICES; tests/test_sim_devices.py)
        assert torch.cuda.is_available() and torch.cuda.device_count() == 2
        assert torch.cuda.current_device() == 0
        assert "simulated" in torch.cuda.get_device_name()
        assert torch.cuda.get_device_capability() == (9, 0)
        assert torch.cuda.get_device_properties(0).total_memory > 0
        x = torch.zeros(4, device="cuda")
        assert isinstance(x, SimulatedCudaTensor)
        assert x.device == torch.device("cuda", 0) and x.is_cuda and x.get_device() == 0
        assert torch.randn(3, device=torch.device("cuda")).is_cuda
        assert torch.empty(2, 3, device="cuda:0").shape == (2, 3)
        assert torch.full((2,), 7.0, device="cuda").is_cuda
        assert x.new_zeros(3).is_cuda and torch.zeros_like(x).is_cuda
        assert torch.empty_like(x, device="cpu").device.type == "cpu"
        pinned = torch.ones(4).pin_memory()
        assert pinned.is_pinned() and not torch.ones(4).is_pinned()
        assert torch.empty(4, pin_memory=True).is_pinned()
        assert torch.ones(4).cuda().is_cuda and torch.ones(4).to("cuda").is_cuda
        assert torch.tensor([1, 2], device="cuda").is_cuda
        assert x.cpu().device.type == "cpu" and type(x.cpu()) is torch.Tensor
        assert "device='cuda:0'" in repr(x)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            assert torch.cuda.current_stream() is s
        assert torch.cuda.current_stream() is torch.cuda.default_stream()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        end.record()
        assert end.query() and start.elapsed_time(end) >= 0.0
        torch.cuda.set_sync_debug_mode("warn")
        assert torch.cuda.get_sync_debug_mode() == 1
        torch.cuda.set_sync_debug_mode(0)
        torch.cuda.manual_seed(0)
        assert torch.accelerator.current_accelerator().type == "cuda"
        gen = torch.Generator(device="cuda")
        assert isinstance(gen, torch.Generator) and torch.randn(2, device="cuda", generator=gen).is_cuda
        assert x.untyped_storage().nbytes() == 16
    assert not [e for e in _mine(t.events) if e.kind not in (K.H2D_COPY, K.CPU_COPY)]


def test_formatting_a_device_scalar_reads_it():
    with syncscope.trap(device="sim") as t:
        x = torch.arange(4.0, device="cuda")
        assert f"{x.sum():.1f}" == "6.0"  # format-read
    assert [(e.kind, e.site.line) for e in _mine(t.events)] == [(K.ITEM, _line("format-read"))]


def test_numerics_are_cpu_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 8))
    x = torch.randn(4, 16)
    q = torch.randn(2, 4, 8, 16)
    with torch.inference_mode():
        ref = model(x)
        ref_att = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    with syncscope.trap(device="sim"), torch.inference_mode():
        model.to("cuda")
        assert model[0].weight.is_cuda and isinstance(model[0].weight, torch.nn.Parameter)
        out = model(x.cuda())
        qd = q.cuda()
        att = F.scaled_dot_product_attention(qd, qd, qd, is_causal=True)
        assert out.is_cuda and att.is_cuda
        assert torch.equal(out.cpu(), ref)
        assert torch.equal(att.cpu(), ref_att)
        model.cpu()


def test_views_in_place_and_indexing_share_memory():
    with syncscope.trap(device="sim"):
        a = torch.zeros(6, device="cuda")
        assert a.add_(1) is a
        a[1:3].fill_(5)
        a[4] = torch.tensor(9.0, device="cuda")
        assert a.tolist() == [1.0, 5.0, 5.0, 1.0, 9.0, 1.0]
        idx = torch.tensor([0, 4], device="cuda")
        assert a[idx].tolist() == [1.0, 9.0]
        b = a.view(2, 3)
        b[1, 0] = 0.0
        assert a[3].item() == 0.0


def test_mixing_devices_fails_as_on_a_gpu():
    with syncscope.trap(device="sim"):
        x = torch.ones(4, device="cuda")
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            x + torch.ones(4)
        assert (x + torch.tensor(2.0)).is_cuda  # a 0-dim host tensor is fine, as on CUDA


def test_threads_started_inside_run_on_the_device():
    def worker():
        w = torch.ones(3, device="cuda")
        w.sum().item()  # thread-sync

    with syncscope.trap(device="sim") as t:
        th = threading.Thread(target=worker, name="worker-1")
        th.start()
        th.join()
    (event,) = _mine(t.events)
    assert (event.kind, event.site.line, event.thread) == (K.ITEM, _line("thread-sync"), "worker-1")


def test_autograd_records_a_graph_on_the_simulated_device():
    # (tests/test_sim_autograd.py has the training steps.)
    with torch.inference_mode(False), torch.enable_grad():  # whatever the grad-mode fixture set
        _autograd_records_a_graph()


def _autograd_records_a_graph():
    torch.manual_seed(0)
    cpu_layer = torch.nn.Linear(4, 2)
    with syncscope.trap(device="sim"):
        layer = torch.nn.Linear(4, 2)
        layer.load_state_dict(cpu_layer.state_dict())
        layer = layer.cuda()
        out = layer(torch.ones(3, 4, device="cuda"))
        assert out.shape == (3, 2) and out.requires_grad and out.grad_fn is not None
        out.sum().backward()
        assert layer.weight.grad.device.type == "cuda"
        got = layer.weight.grad.cpu()
    cpu_layer(torch.ones(3, 4)).sum().backward()
    assert torch.equal(got, cpu_layer.weight.grad)


def test_error_policy_raises_at_the_users_line():
    with syncscope.trap(device="sim"):
        x = torch.arange(4, device="cuda")
        with pytest.raises(syncscope.HostSyncError) as info:
            with syncscope.forbid_syncs(device="sim"):
                x.sum().item()  # forbidden
    assert f"{HERE}:{_line('forbidden')}" in str(info.value)


def test_torch_sync_debug_mode_is_emulated():
    with syncscope.trap(device="sim"):
        x = torch.arange(4, device="cuda")
        torch.cuda.set_sync_debug_mode("error")
        try:
            with pytest.raises(RuntimeError, match="called a synchronizing CUDA operation"):
                x.sum().item()
            x.sum()  # not a sync: fine
        finally:
            torch.cuda.set_sync_debug_mode("default")


# -- the race hazard -------------------------------------------------------------------------------
def test_unsynced_read_of_nonblocking_d2h_copy_is_reported_with_both_sites():
    with syncscope.trap(device="sim") as t:
        dev = torch.arange(8, device="cuda")
        host = dev.to("cpu", non_blocking=True)  # copy-site
        assert host.is_pinned()
        total = host.sum()  # read-site
    (event,) = _mine(t.events)
    assert event.kind == K.UNSYNCED_D2H_READ == "unsynced_d2h_read"
    assert event.site.line == _line("read-site")
    assert event.related is not None and event.related.line == _line("copy-site")
    assert os.path.basename(event.related.path) == HERE
    assert total.item() == 28  # the value is right here; on a GPU it may not be


def test_read_after_event_synchronize_is_not_reported():
    with syncscope.trap(device="sim") as t:
        dev = torch.arange(8, device="cuda")
        host = dev.to("cpu", non_blocking=True)
        done = torch.cuda.Event()
        done.record()
        done.synchronize()  # event-sync
        assert host.tolist() == list(range(8))
    assert [(e.kind, e.site.line) for e in _mine(t.events)] == [(K.EVENT_SYNC, _line("event-sync"))]


@pytest.mark.parametrize("how", ["device", "stream", "blocking_item", "query"])
def test_other_synchronizations_cover_the_copy(how):
    with syncscope.trap(device="sim") as t:
        dev = torch.arange(8, device="cuda")
        host = dev.to("cpu", non_blocking=True)
        if how == "device":
            torch.cuda.synchronize()
        elif how == "stream":
            torch.cuda.current_stream().synchronize()
        elif how == "blocking_item":
            dev.max().item()  # waits for everything queued on the stream before it
        else:
            event = torch.cuda.Event()
            event.record()
            assert event.query()
        host.numpy().sum()
    assert not [e for e in t.events if e.kind == K.UNSYNCED_D2H_READ]


def test_event_recorded_before_the_copy_or_on_another_stream_does_not_cover_it():
    with syncscope.trap(device="sim") as t:
        dev = torch.arange(8, device="cuda")
        early = torch.cuda.Event()
        early.record()
        host = dev.to("cpu", non_blocking=True)
        early.synchronize()
        int(host[0])  # stale-1
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            host2 = dev.to("cpu", non_blocking=True)
        torch.cuda.current_stream().synchronize()  # the default stream, not `side`
        host2.tolist()  # stale-2
        side.synchronize()
        host2.tolist()
    reads = [e.site.line for e in t.events if e.kind == K.UNSYNCED_D2H_READ]
    assert reads == [_line("stale-1"), _line("stale-2")]


def test_copy_into_pinned_buffer_views_and_writes():
    with syncscope.trap(device="sim") as t:
        dev = torch.arange(8, device="cuda")
        buf = torch.empty(8, dtype=torch.long).pin_memory()
        buf.copy_(dev, non_blocking=True)  # copy-into-buffer
        head = buf[:4]  # a view: not a read
        assert head.shape == (4,)
        head.max()  # read-through-view
        torch.cuda.synchronize()
        buf.copy_(dev, non_blocking=True)  # reusing the buffer is a write, not a read
        torch.cuda.synchronize()
        assert buf.sum().item() == 28
    reads = [(e.site.line, e.related.line) for e in t.events if e.kind == K.UNSYNCED_D2H_READ]
    assert reads == [(_line("read-through-view"), _line("copy-into-buffer"))]


def test_nonblocking_copy_into_pageable_memory_blocks_and_is_no_race():
    with syncscope.trap(device="sim") as t:
        dev = torch.arange(8, device="cuda")
        pageable = torch.empty(8, dtype=torch.long)
        pageable.copy_(dev, non_blocking=True)  # pageable-copy
        pageable.sum()
    kinds = [(e.kind, e.site.line) for e in _mine(t.events)]
    assert kinds == [(K.CPU_COPY, _line("pageable-copy"))]


# -- what cannot be simulated ----------------------------------------------------------------------
_LIBS: list = []


def _define_only_cuda_op() -> None:
    if not _LIBS:  # a namespace is defined once per process (the test runs in several grad modes)
        lib = torch.library.Library("syncscope_simtest", "DEF")
        lib.define("only_cuda(Tensor x) -> Tensor")
        lib.impl("only_cuda", lambda x: x * 2, "CUDA")
        _LIBS.append(lib)


def test_an_op_without_a_cpu_kernel_names_the_op_and_a_way_out():
    _define_only_cuda_op()
    with syncscope.trap(device="sim"):
        x = torch.ones(3, device="cuda")
        with pytest.raises(SimulatedDeviceError) as info:
            torch.ops.syncscope_simtest.only_cuda(x)
    message = str(info.value)
    assert "syncscope_simtest::only_cuda" in message
    assert "--device cuda" in message and "torch.library.impl" in message


# -- install / uninstall ---------------------------------------------------------------------------
def test_uninstall_restores_torch():
    had_cuda = torch.cuda.is_available()
    before = {
        "sync": torch.cuda.synchronize,
        "stream": torch.cuda.Stream,
        "event": torch.cuda.Event,
        "one_hot": F.one_hot,
        "bootstrap": threading.Thread._bootstrap_inner,
        "shallow": torch._has_compatible_shallow_copy_type,
        "env": os.environ.get("TRITON_INTERPRET"),
    }
    for _ in range(3):
        with syncscope.trap(device="sim"):
            assert torch.cuda.is_available()
            torch.zeros(2, device="cuda").sum().item()
    after = {
        "sync": torch.cuda.synchronize,
        "stream": torch.cuda.Stream,
        "event": torch.cuda.Event,
        "one_hot": F.one_hot,
        "bootstrap": threading.Thread._bootstrap_inner,
        "shallow": torch._has_compatible_shallow_copy_type,
        "env": os.environ.get("TRITON_INTERPRET"),
    }
    assert before == after
    assert torch.cuda.is_available() == had_cuda
    assert torch.overrides._get_current_function_mode_stack() == []
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    assert _get_current_dispatch_mode_stack() == []


def test_events_carry_region_scope_and_unmeasured_time():
    with syncscope.trap(device="sim") as t:
        x = torch.arange(4, device="cuda")
        with syncscope.region("decode_step"):
            x.tolist()  # inside-region
        x.sum().item()  # outside-region
    inside, outside = _mine(t.events)
    assert (outside.site.line, outside.in_scope, outside.region) == (_line("outside-region"), False, None)
    assert (inside.site.line, inside.in_scope, inside.region) == (_line("inside-region"), True, "decode_step")
    assert inside.kind == K.TOLIST and inside.api == "Tensor.tolist"
    assert all(e.blocked_ns is None and e.detector == "sim" for e in t.events)
    assert inside.stack[0] == inside.site


def test_a_thread_that_outlives_the_trap_steps_aside():
    import queue

    jobs: queue.Queue = queue.Queue()
    results: queue.Queue = queue.Queue()

    def worker():
        while (job := jobs.get()) is not None:
            results.put(job())

    with syncscope.trap(device="sim"):
        th = threading.Thread(target=worker)
        th.start()
        jobs.put(lambda: torch.zeros(2, device="cuda").is_cuda)
        assert results.get(timeout=30) is True
    jobs.put(lambda: torch.ones(2).add(1).sum().item())  # plain CPU work after uninstall
    assert results.get(timeout=30) == 4.0
    jobs.put(None)
    th.join()


def test_an_op_that_needs_a_real_device_is_recognised_on_either_build_of_torch():
    # The simulated device replays an op on CPU-device views when its device guard fails: on a
    # CPU-only build with "not linked with support for cuda devices", on a CUDA build on a machine
    # without a usable GPU with the driver's words (torch 2.13.0+cu130, no GPU).
    from syncscope.runtime.sim.no_device import needs_a_real_device

    assert needs_a_real_device(RuntimeError("PyTorch is not linked with support for cuda devices"))
    assert needs_a_real_device(RuntimeError("CUDA error: CUDA driver version is insufficient for CUDA runtime version"))
    assert needs_a_real_device(RuntimeError("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU"))
    assert not needs_a_real_device(RuntimeError("The size of tensor a (3) must match the size of tensor b (4)"))
    assert not needs_a_real_device(ValueError("Found no NVIDIA driver"))  # not an op's error
