"""A copy/compute overlap pipeline: each batch goes host->device on a side stream from pinned
memory, the compute stream waits on an event, the side stream's buffers are handed over with
record_stream, and timing events are read once at the end."""
# parity: stdout is the same on every device

import os

import torch

device = os.environ.get("PARITY_DEVICE", "cuda")
accel = torch.get_device_module(device)  # torch.cuda on a GPU; torch.cpu for the CPU reference
pin = device == "cuda"  # page-locked host memory needs an accelerator

torch.manual_seed(8)
weight = torch.randn(32, 32).to(device)
host_batches = [torch.randn(16, 32).pin_memory() if pin else torch.randn(16, 32) for _ in range(6)]

copy_stream = accel.Stream()
compute = accel.current_stream()
timing = {"enable_timing": True} if device == "cuda" else {}  # torch.cpu.Event takes no arguments
start, end = accel.Event(**timing), accel.Event(**timing)


def prefetch(i):
    with accel.stream(copy_stream):
        batch = host_batches[i].to(device, non_blocking=True)
        ready = accel.Event()
        ready.record(copy_stream)
    return batch, ready


start.record(compute)
results = []
batch, ready = prefetch(0)
for i in range(len(host_batches)):
    compute.wait_event(ready)  # the compute stream waits for the copy, the host does not
    if device == "cuda":
        batch.record_stream(compute)  # made on the copy stream, used on this one
    current = batch
    if i + 1 < len(host_batches):
        batch, ready = prefetch(i + 1)
    results.append(torch.tanh(current @ weight).sum(0))
end.record(compute)

end.synchronize()  # wait for the last kernel before reading the timer
elapsed_ms = start.elapsed_time(end) if device == "cuda" else 0.0
if device == "cuda":
    copy_stream.synchronize()  # torch.cpu.Stream has no synchronize
totals = torch.stack(results).sum(1)
print("totals:", [round(v, 2) for v in totals.tolist()])
print("timed:", elapsed_ms >= 0.0)
