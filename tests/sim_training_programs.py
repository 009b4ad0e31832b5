"""Training programs written for CUDA (they use the GPU when torch sees one, else the CPU), shared
by tests/test_sim_autograd.py (simulated device vs plain CPU) and tests/test_gpu_training.py (the
real GPU detector on the device machine).

Each program marks every line where a GPU blocks the host with `# sync: KIND[, KIND]`; the
(line, kind) set a detector reports for the program's file must be exactly that set. Programs
print their numbers (losses, parameters), so two runs can be compared by their stdout.

VALID programs have no sync inside the training loop (only setting up and the final read);
INVALID ones sync in it (the per-step `loss.item()`, GradScaler's inf check with a non-fused
optimizer, `error_if_nonfinite=True`, a boolean-mask loss whose backward syncs too).
"""

from __future__ import annotations

import contextlib
import io
import re
import runpy
from pathlib import Path

HEADER = """\
import torch
cuda = torch.cuda.is_available()
dev = "cuda" if cuda else "cpu"
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.GELU(), torch.nn.Linear(16, 1)).to(dev)  # sync: h2d_copy
x = torch.randn(32, 6).to(dev)  # sync: h2d_copy
y = torch.randn(32, 1).to(dev)  # sync: h2d_copy
"""

FOOTER = """\
flat = torch.cat([p.detach().flatten() for p in model.parameters()])
print([round(v, 6) for v in flat.tolist()])  # sync: tolist
"""

PROGRAMS = {
    # VALID: SGD with momentum, foreach and single-tensor paths; no sync in the loop.
    "sgd_no_sync": HEADER + """\
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, foreach=False)
opt2 = torch.optim.SGD(model.parameters(), lr=0.01, foreach=True)
for step in range(4):
    opt.zero_grad(set_to_none=step % 2 == 0)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt2.step()
""" + FOOTER,
    # INVALID: the per-step loss read.
    "adam_loss_item": HEADER + """\
opt = torch.optim.Adam(model.parameters(), lr=0.01)
losses = []
for step in range(4):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())  # sync: item
print([round(v, 6) for v in losses])
""" + FOOTER,
    # VALID: AdamW on the foreach path with foreach gradient clipping: the total norm stays on
    # the device, no sync.
    "adamw_foreach_clip": HEADER + """\
opt = torch.optim.AdamW(model.parameters(), lr=0.01, foreach=True)
for step in range(4):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5, foreach=True)
    opt.step()
print(round(norm.item(), 5))  # sync: item
""" + FOOTER,
    # INVALID: error_if_nonfinite reads the norm on the host every step; fused Adam.
    "fused_adam_clip_nonfinite": HEADER + """\
opt = torch.optim.Adam(model.parameters(), lr=0.01, fused=True)
for step in range(4):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5, error_if_nonfinite=True)  # sync: item
    opt.step()
""" + FOOTER,
    # INVALID: AMP (float16) training step with GradScaler + grad clipping: `scaler.step` reads
    # found_inf on the host (a non-fused optimizer), every step.
    "amp_gradscaler_clip": HEADER + """\
opt = torch.optim.AdamW(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler(dev)
for step in range(4):
    opt.zero_grad()
    with torch.autocast(dev, dtype=torch.float16):
        out = model(x)
    loss = torch.nn.functional.mse_loss(out.float(), y)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)  # sync: item
    scaler.update()
""" + FOOTER,
    # VALID: the same with the deprecated torch.cuda.amp.GradScaler and a fused optimizer: the
    # fused step takes found_inf on the device, so no sync in the loop.
    "amp_fused_gradscaler": HEADER + """\
opt = torch.optim.AdamW(model.parameters(), lr=0.01, fused=True)
scaler = torch.cuda.amp.GradScaler() if cuda else torch.amp.GradScaler("cpu")
for step in range(4):
    opt.zero_grad()
    with torch.autocast(dev, dtype=torch.bfloat16):
        out = model(x)
    loss = torch.nn.functional.mse_loss(out.float(), y)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
    scaler.step(opt)
    scaler.update()
""" + FOOTER,
    # INVALID: a boolean-mask loss: the forward gather syncs, and so does its backward (the
    # index_put of the gradient through the mask), reported at the line that ran backward.
    "masked_loss_backward": HEADER + """\
opt = torch.optim.SGD(model.parameters(), lr=0.05)
keep = y > 0
for step in range(3):
    opt.zero_grad()
    pred = model(x)
    loss = (pred[keep] - y[keep]).square().mean()  # sync: bool_mask_index
    loss.backward()  # sync: other
    opt.step()
grads = torch.autograd.grad(model(x)[keep].sum(), list(model.parameters()))  # sync: bool_mask_index, other
print([round(g.abs().sum().item(), 5) for g in grads])  # sync: item
""" + FOOTER,
    # VALID: the rest of the autograd surface: hooks, retain_grad, double backward, detach,
    # requires_grad_, an eval pass under no_grad and inference_mode.
    "autograd_surface": HEADER + """\
w = torch.randn(6, 1).to(dev).requires_grad_()  # sync: h2d_copy
hook_calls = []
w.register_hook(lambda g: hook_calls.append(1) or g * 0.5)
h = x @ w
h.retain_grad()
loss = torch.nn.functional.softplus(h).mean()
(gw,) = torch.autograd.grad(loss, w, create_graph=True)
gw.square().sum().backward()
loss2 = model(x).sum() + h.detach().sum()
loss2.backward(retain_graph=True)
with torch.no_grad():
    frozen = model(x)
with torch.inference_mode():
    served = model(x)
flags = [w.requires_grad, h.requires_grad, h.is_leaf, w.is_leaf, frozen.requires_grad, served.requires_grad]
print(flags, len(hook_calls), h.grad is None)
print([round(v, 6) for v in torch.cat([w.grad.flatten(), model[0].weight.grad.flatten()]).tolist()])  # sync: tolist
""" + FOOTER,
}

VALID = ["sgd_no_sync", "adamw_foreach_clip", "amp_fused_gradscaler", "autograd_surface"]
INVALID = ["adam_loss_item", "fused_adam_clip_nonfinite", "amp_gradscaler_clip", "masked_loss_backward"]
assert sorted(VALID + INVALID) == sorted(PROGRAMS)

_MARK = re.compile(r"#\s*sync:\s*([a-z0-9_, ]+)$")


def expected(name: str, programs: dict | None = None) -> set[tuple[int, str]]:
    """The (line, kind) set the program's `# sync:` comments name."""
    found = set()
    for number, text in enumerate((programs or PROGRAMS)[name].splitlines(), 1):
        match = _MARK.search(text.rstrip())
        if match:
            found.update((number, kind.strip()) for kind in match.group(1).split(","))
    return found


def write(tmp_path: Path, name: str, programs: dict | None = None) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text((programs or PROGRAMS)[name])
    return path


def run(path: Path, device: str | None = None):
    """Run the program in this process: (stdout, the (line, kind) set reported at its file).
    `device=None`: plain python, no detector."""
    import syncscope

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if device is None:
            runpy.run_path(str(path), run_name="__main__")
            return out.getvalue(), set()
        with syncscope.trap(device=device) as trap:
            runpy.run_path(str(path), run_name="__main__")
    sites = {(e.site.line, e.kind) for e in trap.events if Path(e.site.path).name == path.name}
    return out.getvalue(), sites


# -- two GPUs (tests/test_sim_devices.py; on the GPU only where torch sees two) ---------------------
DEVICES_HEADER = """\
import torch
cuda = torch.cuda.is_available()
d0, d1 = ("cuda:0", "cuda:1") if cuda else ("cpu", "cpu")
torch.manual_seed(0)
"""

DEVICE_PROGRAMS = {
    # VALID: a model split over two GPUs, activations handed over device to device; trained.
    "two_gpu_pipeline": DEVICES_HEADER + """\
first = torch.nn.Linear(6, 16).to(d0)  # sync: h2d_copy
second = torch.nn.Linear(16, 1).to(d1)  # sync: h2d_copy
x = torch.randn(32, 6).to(d0)  # sync: h2d_copy
y = torch.randn(32, 1).to(d1)  # sync: h2d_copy
opt = torch.optim.SGD([*first.parameters(), *second.parameters()], lr=0.05, momentum=0.9)
for step in range(3):
    opt.zero_grad()
    h = torch.relu(first(x)).to(d1)
    loss = torch.nn.functional.mse_loss(second(h), y)
    loss.backward()
    opt.step()
with torch.no_grad():
    both = torch.cat([first.weight.flatten(), second.weight.flatten().to(d0), second(h).flatten().to(d0)])
print([round(v, 6) for v in both.tolist()])  # sync: tolist
""",
    # INVALID: reads on the second GPU block the host as on the first.
    "two_gpu_reads": DEVICES_HEADER + """\
b = torch.randn(8).to(d1)  # sync: h2d_copy
keep = b > 0
picked = b[keep]  # sync: bool_mask_index
total = picked.sum().item()  # sync: item
moved = b.to(d0)
back = moved.cpu()  # sync: cpu_copy
print(round(total, 5), [round(v, 5) for v in back.tolist()])
""",
}
