"""CUDA graphs on the simulated device: capture runs and records the ops, replay re-runs them into
the same static tensors, and a host sync inside a capture is reported (`sync_in_capture`, at the
syncing line, with the line where the capture began) and refused as a GPU refuses it."""

from __future__ import annotations


import pytest
import torch

import syncscope
from syncscope.events import SyncKind as K
from tests.marked_lines import events_in, marked_line
from tests.sim_grad_modes import grad_mode  # noqa: F401

pytestmark = pytest.mark.usefixtures("grad_mode")


def _line(marker: str) -> int:
    return marked_line(__file__, marker)


def _mine(events):
    return events_in(events, __file__)


def _step(layer, x):
    """A decode-step-like body: matmul, activation, in-place update, a fresh factory, a slice
    store and a scalar fill, so every recorded path is replayed."""
    h = layer(x).relu()
    acc = torch.zeros(x.shape[0], device=x.device)
    acc += h.sum(-1)
    h[:, :1] = acc.unsqueeze(1)
    h[:, -1:] = 0.5
    return h * 2, acc


def test_capture_runs_the_ops_and_replay_reruns_them_into_the_static_tensors():
    torch.manual_seed(0)
    layer = torch.nn.Linear(8, 8)
    inputs = [torch.randn(3, 8) for _ in range(4)]
    with torch.no_grad():
        want = [_step(layer, x) for x in inputs]
    with syncscope.trap(device="sim") as t:
        dev_layer = layer.cuda()  # weights-up
        static_in = inputs[0].cuda()  # first-input
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):  # capture-begins
            assert torch.cuda.is_current_stream_capturing()
            static_out, static_acc = _step(dev_layer, static_in)
        assert not torch.cuda.is_current_stream_capturing()
        # capture ran the ops: the static outputs hold the first input's values
        assert torch.allclose(static_out.cpu(), want[0][0]) and torch.allclose(static_acc.cpu(), want[0][1])  # check-capture
        outs = []
        for x in inputs[1:]:
            static_in.copy_(x.cuda())  # replace-input
            g.replay()
            outs.append((static_out.cpu(), static_acc.cpu()))  # read-output
        dev_layer.cpu()  # weights-down
    for (out, acc), (ref_out, ref_acc) in zip(outs, want[1:]):
        assert torch.allclose(out, ref_out) and torch.allclose(acc, ref_acc)
    # the `with` line synchronizes as torch.cuda.graph does on a GPU; replay itself never syncs
    kinds = {(e.site.line, e.kind) for e in _mine(t.events)}
    assert kinds == {
        (_line("weights-up"), K.H2D_COPY),
        (_line("first-input"), K.H2D_COPY),
        (_line("check-capture"), K.CPU_COPY),
        (_line("weights-down"), K.CPU_COPY),
        (_line("capture-begins"), K.DEVICE_SYNC),
        (_line("replace-input"), K.H2D_COPY),
        (_line("read-output"), K.CPU_COPY),
    }


def test_replay_without_a_capture_fails_as_torch_does():
    with syncscope.trap(device="sim"):
        with pytest.raises(RuntimeError, match="nothing was captured"):
            torch.cuda.CUDAGraph().replay()


def test_a_sync_inside_a_capture_is_reported_at_its_line_and_refused():
    with syncscope.trap(device="sim") as t:
        x = torch.ones(4, device="cuda")
        g = torch.cuda.CUDAGraph()
        with pytest.raises(RuntimeError, match="operation not permitted when stream is capturing"):
            with torch.cuda.graph(g):  # capture-start
                y = x * 2
                if y.sum().item() > 0:  # sync-in-capture
                    y += 1
        # the failed capture left nothing behind: the next capture works
        with torch.cuda.graph(g):
            z = x + 1
        g.replay()
        assert z.tolist() == [2.0] * 4
    (event,) = [e for e in _mine(t.events) if e.kind == K.SYNC_IN_CAPTURE]
    assert event.kind == "sync_in_capture"
    assert event.site.line == _line("sync-in-capture") and event.api == "Tensor.item"
    assert event.related is not None and event.related.line == _line("capture-start")


def test_record_mode_keeps_going_and_capture_end_then_fails(monkeypatch):
    monkeypatch.setenv("SYNCSCOPE_SIM_CAPTURE_SYNC", "record")
    with syncscope.trap(device="sim") as t:
        x = torch.arange(4.0, device="cuda")
        g = torch.cuda.CUDAGraph()
        g.capture_begin()
        x.tolist()  # tolist-in-capture
        torch.cuda.synchronize()  # synchronize-in-capture
        with pytest.raises(RuntimeError, match="previous error during capture"):
            g.capture_end()
    got = [(e.site.line, e.kind, e.api) for e in _mine(t.events)]
    assert got == [
        (_line("tolist-in-capture"), K.SYNC_IN_CAPTURE, "Tensor.tolist"),
        (_line("synchronize-in-capture"), K.SYNC_IN_CAPTURE, "torch.cuda.synchronize"),
    ]


def test_make_graphed_callables_pools_and_side_streams():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    xs = [torch.randn(2, 4) for _ in range(3)]
    with torch.no_grad():
        want = [mlp(x) for x in xs]
    with syncscope.trap(device="sim"):
        dev = mlp.cuda()
        sample = torch.zeros(2, 4, device="cuda")
        graphed = torch.cuda.make_graphed_callables(dev, (sample,), num_warmup_iters=2)
        assert graphed is dev
        got = [graphed(x.cuda()).cpu() for x in xs]
        # a second graph sharing the first one's pool, captured on a side stream
        pool = torch.cuda.graph_pool_handle()
        side = torch.cuda.Stream()
        g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        a = torch.ones(3, device="cuda")
        with torch.cuda.graph(g1, pool=pool, stream=side):
            assert torch.cuda.current_stream() is side
            b = a * 3
        with torch.cuda.graph(g2, pool=g1.pool()):
            c = b + a
        a.fill_(2.0)
        g1.replay()
        g2.replay()
        assert b.tolist() == [6.0] * 3 and c.tolist() == [8.0] * 3
        dev.cpu()
    for out, ref in zip(got, want):
        assert torch.allclose(out, ref, atol=1e-6)


def test_captured_pinned_copy_rereads_the_host_buffer():
    with syncscope.trap(device="sim"):
        host = torch.zeros(4).pin_memory()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            dev = host.to("cuda", non_blocking=True)
            out = dev * 10
        host.copy_(torch.arange(4.0))
        g.replay()
        assert out.tolist() == [0.0, 10.0, 20.0, 30.0]


def test_uninstall_restores_torch_graph_api():
    before = (torch.cuda.CUDAGraph, torch.cuda.graph, torch.cuda.make_graphed_callables, torch.cuda.graph_pool_handle)
    with syncscope.trap(device="sim"):
        assert torch.cuda.CUDAGraph is not before[0]
    assert (torch.cuda.CUDAGraph, torch.cuda.graph, torch.cuda.make_graphed_callables, torch.cuda.graph_pool_handle) == before
