"""Autograd on the simulated device (issue 14): training steps (backward, SGD/Adam/AdamW on their
single-tensor, foreach and fused paths, clip_grad_norm_, AMP with GradScaler) give plain CPU's
numbers and report exactly the syncs a GPU has, and the Python autograd surface of a simulated
tensor answers as a CPU tensor's does, under grad, no_grad and inference_mode."""

from __future__ import annotations

import pytest
import torch

import syncscope
from syncscope.events import SyncKind as K
from tests import sim_training_programs as programs
from tests.sim_grad_modes import MODES, grad_mode  # noqa: F401


@pytest.mark.parametrize("name", programs.VALID + programs.INVALID)
def test_training_program_matches_plain_cpu_and_reports_the_gpus_syncs(tmp_path, name):
    if torch.cuda.is_available():  # plain python would take the real GPU: tests/test_gpu_training.py
        pytest.skip("plain python runs these programs on the GPU here; the GPU half is tests/test_gpu_training.py")
    path = programs.write(tmp_path, name)
    plain, _ = programs.run(path)
    simulated, sites = programs.run(path, device="sim")
    assert simulated == plain
    assert sites == programs.expected(name)


def test_valid_programs_have_no_sync_inside_their_loop():
    # The VALID/INVALID split says something: VALID loops are sync-free, INVALID ones are not.
    for name in programs.VALID + programs.INVALID:
        source = programs.PROGRAMS[name].splitlines()
        loop = [n for n, text in enumerate(source, 1) if text.startswith("for step")]
        in_loop = {line for line, _ in programs.expected(name) if loop and line > loop[0] and source[line - 1].startswith("    ")}
        assert bool(in_loop) == (name in programs.INVALID), name


def _forward(device):
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 2).to(device)
    x = torch.randn(4, 3).to(device)
    out = layer(x)
    return layer, x, out


@pytest.mark.usefixtures("grad_mode")
def test_requires_grad_flags_are_cpus_in_every_grad_mode():
    _, _, cpu_out = _forward("cpu")
    want = (cpu_out.requires_grad, cpu_out.is_leaf, cpu_out.grad_fn is None)
    with syncscope.trap(device="sim"):
        layer, x, out = _forward("cuda")
        assert out.device.type == "cuda"
        assert (out.requires_grad, out.is_leaf, out.grad_fn is None) == want
        assert layer.weight.requires_grad and layer.weight.is_leaf and not x.requires_grad
        assert isinstance(layer.weight, torch.nn.Parameter)


def test_grads_live_on_the_device_and_keep_their_identity():
    with syncscope.trap(device="sim") as t:
        layer, x, out = _forward("cuda")
        out.sum().backward()
        grad = layer.weight.grad
        assert grad is layer.weight.grad and grad.device.type == "cuda" and not grad.requires_grad
        layer.weight.grad = None
        assert layer.weight.grad is None
        with pytest.raises(RuntimeError, match="same device"):
            layer.weight.grad = torch.zeros(2, 3)  # a host gradient for a device tensor
    assert [e for e in t.events if e.kind not in (K.H2D_COPY,)] == []


def test_errors_are_cpus():
    with syncscope.trap(device="sim"):
        layer, x, out = _forward("cuda")
        loss = out.sum()
        loss.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            layer.weight.add_(1)
        with torch.no_grad():
            plain = layer(x).sum()
        with pytest.raises(RuntimeError, match="does not require grad"):
            plain.backward()


def test_a_sync_in_backward_is_named_by_its_op_and_obeys_the_error_policy():
    with syncscope.trap(device="sim") as t:
        x = torch.randn(8, device="cuda", requires_grad=True)
        keep = torch.arange(8, device="cuda") % 2 == 0
        loss = x[keep].sum()  # bool_mask_index here
        loss.backward()  # and its backward: other, at this line
    backward = [e for e in t.events if e.kind == K.OTHER]
    assert len(backward) == 1 and "index_put" in backward[0].api
    with syncscope.trap(device="sim"):
        x = torch.randn(8, device="cuda", requires_grad=True)
        keep = torch.arange(8, device="cuda") % 2 == 0
        loss = x[keep].sum()
        with syncscope.forbid_syncs(device="sim"):
            with pytest.raises(syncscope.HostSyncError):
                loss.backward()


def test_double_backward_and_autograd_grad_match_cpu():
    def run(device):
        torch.manual_seed(1)
        w = torch.randn(5, device="cpu").to(device).requires_grad_()
        y = (w.sin() * w).sum()
        (g,) = torch.autograd.grad(y, w, create_graph=True)
        (gg,) = torch.autograd.grad(g.sum(), w, retain_graph=True)
        torch.autograd.backward([g.square().sum()], inputs=[w])
        return g.detach().cpu(), gg.cpu(), w.grad.cpu()

    want = run("cpu")
    with syncscope.trap(device="sim"):
        got = run("cuda")
    assert all(torch.equal(a, b) for a, b in zip(want, got))


def test_uninstall_leaves_cpu_autograd_and_optimizers_as_they_were():
    import torch.optim.optimizer as optimizer

    before = list(optimizer._foreach_supported_types)
    with syncscope.trap(device="sim"):
        pass
    assert optimizer._foreach_supported_types == before
    w = torch.ones(3, requires_grad=True)
    (w * 2).sum().backward()
    assert torch.equal(w.grad, torch.full((3,), 2.0))
    assert MODES  # the grad-mode table the fixture uses is importable here


class _Scaled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        count = (x > 0).sum()
        ctx.mark_non_differentiable(count)
        return x * x * scale, count

    @staticmethod
    def backward(ctx, grad, _count_grad):
        (x,) = ctx.saved_tensors
        if bool(x.abs().max() > 100):  # custom-backward-sync
            grad = grad.clamp(-1, 1)
        return 2 * x * grad * ctx.scale, None


class _Times(torch.autograd.Function):  # the setup_context style
    @staticmethod
    def forward(x, k):
        return x * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.k = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.k, None


def test_custom_functions_and_checkpointing_carry_the_gradient():
    from torch.utils.checkpoint import checkpoint

    def run(device):
        torch.manual_seed(0)
        layer = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.GELU()).to(device)
        x = torch.randn(5, 3).to(device).requires_grad_()
        h = checkpoint(layer, x, use_reentrant=False) + checkpoint(layer, x, use_reentrant=True)
        squared, count = _Scaled.apply(h, 0.5)
        loss = squared.sum() + _Times.apply(h, 3.0).sum()
        loss.backward()
        return [layer[0].weight.grad.cpu(), x.grad.cpu(), count.cpu()], (count.requires_grad, squared.requires_grad)

    want = run("cpu")
    with syncscope.trap(device="sim") as t:
        got = run("cuda")
    assert all(torch.equal(a, b) for a, b in zip(want[0], got[0])) and got[1] == want[1] == (False, True)
    line = next(n for n, text in enumerate(open(__file__).read().splitlines(), 1) if text.endswith("# custom-backward-sync"))
    # a sync in a custom backward: at its own line, as the GPU detector sees it on autograd's thread
    # (the rest: the .to(device) copies and the .cpu() reads)
    assert {(e.site.line, e.kind) for e in t.events if e.kind not in (K.H2D_COPY, K.CPU_COPY)} == {(line, K.ITEM)}


def test_tensors_passed_by_keyword_carry_the_gradient():
    def run(device):
        w = torch.arange(3.0).to(device).requires_grad_()
        torch.cat(tensors=[w, w * 2]).square().sum().backward()
        return w.grad.cpu()

    want = run("cpu")
    with syncscope.trap(device="sim"):
        assert torch.equal(run("cuda"), want)


def test_optimizers_default_to_the_foreach_path_as_on_a_gpu():
    # NAdam's foreach and for-loop formulas round differently: the simulated device's default is
    # the GPU's (foreach), so it matches plain CPU with foreach=True, not plain CPU's default.
    def run(device, **options):
        torch.manual_seed(0)
        layer = torch.nn.Linear(4, 3).to(device)
        opt = torch.optim.NAdam(layer.parameters(), lr=0.01, **options)
        x = torch.randn(8, 4).to(device)
        for _ in range(3):
            opt.zero_grad()
            layer(x).square().mean().backward()
            opt.step()
        return layer.weight.detach().cpu()

    with syncscope.trap(device="sim"):
        simulated = run("cuda")
    assert torch.equal(simulated, run("cpu", foreach=True))
    assert not torch.equal(simulated, run("cpu"))  # (if torch ever makes them agree, drop this line)
