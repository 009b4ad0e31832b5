"""A greedy decode loop written only for CUDA: no CPU fallback anywhere.

On a machine without a GPU, run it on syncscope's simulated device and see the syncs a GPU
would have had, each on its line (blocked time is "n/m": not measured on the simulated device):

    syncscope run --device sim examples/cuda_only.py
    syncscope run examples/cuda_only.py            # --device auto: the GPU when there is one

What it reports (the `# sync:` comments), on a GPU and on the simulated device alike:
- `.to(DEVICE)` of the weights    h2d_copy         (set-up: pageable uploads block)
- `if finished.all():`           item             (a device bool read on the host)
- `tokens[~finished]`            bool_mask_index  (its size depends on device data)
- `torch.tensor(stop_ids, ...)`  h2d_copy         (a Python list uploaded, blocking)
- `done_event.synchronize()`     event_sync
and one thing a GPU never tells you, found only by the simulated device:
- `print(... host_tokens ...)` and `host_tokens.clone()`: unsynced_d2h_read: the host reads a
  non_blocking device->host copy before anything synchronized it (stale data on real hardware),
  with the copy's line as the related site. (The next step's `if finished.all():` waits for the
  stream, so the copy is complete by then.) The fix: record an event after the copy and
  synchronize it before the reads, or read the step's tokens one step later.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

if not torch.cuda.is_available():
    raise SystemExit("this example needs CUDA: run it on a GPU, or with `syncscope run --device sim`")

DEVICE = torch.device("cuda")


@triton.jit
def _scale_rows_kernel(logits_ptr, scale_ptr, vocab, BLOCK: tl.constexpr):
    """logits[row, :] *= scale[row]: one program per row."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < vocab
    scale = tl.load(scale_ptr + row)
    values = tl.load(logits_ptr + row * vocab + cols, mask=mask, other=0.0)
    tl.store(logits_ptr + row * vocab + cols, values * scale, mask=mask)


def scale_rows(logits: torch.Tensor, scale: torch.Tensor) -> None:
    rows, vocab = logits.shape
    _scale_rows_kernel[(rows,)](logits, scale, vocab, BLOCK=triton.next_power_of_2(vocab))


def main(steps: int = 12, batch: int = 8, hidden: int = 64, vocab: int = 256) -> list[list[int]]:
    gen = torch.Generator(device="cpu").manual_seed(0)
    embed = torch.randn(vocab, hidden, generator=gen).to(DEVICE)  # sync: h2d_copy
    head = (torch.randn(hidden, vocab, generator=gen) * hidden**-0.5).to(DEVICE)  # sync: h2d_copy
    inv_temperature = torch.full((batch,), 1.25, device=DEVICE)
    tokens = torch.arange(batch, device=DEVICE)
    finished = torch.zeros(batch, dtype=torch.bool, device=DEVICE)
    stop_ids = [3, 17]
    host_tokens = torch.empty(batch, dtype=torch.long).pin_memory()
    history = []
    for _ in range(steps):
        logits = embed[tokens] @ head
        scale_rows(logits, inv_temperature)
        tokens = torch.argmax(torch.softmax(logits, dim=-1), dim=-1)
        finished |= torch.isin(tokens, torch.tensor(stop_ids, device=DEVICE))  # sync: h2d_copy
        if finished.all():  # sync: item
            break
        active = tokens[~finished]  # sync: bool_mask_index
        tokens = torch.where(finished, tokens, (tokens + active.numel()) % vocab)
        host_tokens.copy_(tokens, non_blocking=True)  # the copy (async)
        print("step tokens:", host_tokens[:4].tolist())  # hazard: unsynced_d2h_read
        history.append(host_tokens.clone())  # hazard: unsynced_d2h_read
    done_event = torch.cuda.Event()
    done_event.record()
    done_event.synchronize()  # sync: event_sync
    return [h.tolist() for h in history]


if __name__ == "__main__":
    result = main()
    print(f"decoded {len(result)} steps on {torch.cuda.get_device_name()}")
