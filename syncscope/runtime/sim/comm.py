"""`torch.nn.parallel` / `torch.cuda.comm` across simulated GPUs (what `nn.DataParallel` uses).

A CPU-only build has no `torch._C._scatter` / `_gather` / `_broadcast` / `_broadcast_coalesced`;
with two simulated GPUs `DataParallel` replicates the module and scatters the batch, and failed
there. Here they are device-to-device copies between simulated GPUs (no host wait on a GPU, none
reported; a gather to the host, `destination=-1`, is a device->host copy and is reported), made
of ops on simulated tensors, so autograd (DataParallel's Broadcast/Scatter/Gather Functions) and
the sync model see them as usual.
"""

from __future__ import annotations

import torch

from syncscope.runtime.sim import devices, whole_ops


def _to(t, device):
    return whole_ops.to_other_device(t, devices.resolve(device))


def broadcast(tensor, devices_):
    return [_to(tensor, d) for d in devices_]


def broadcast_coalesced(tensors, devices_, buffer_size=10485760):
    return [[_to(t, d) for t in tensors] for d in devices_]


def scatter(tensor, devices_, chunk_sizes=None, dim=0, streams=None):
    devices_ = list(devices_)
    if chunk_sizes is None:
        chunks = tensor.chunk(len(devices_), dim)
    else:
        chunks = tensor.split(list(chunk_sizes), dim)
    return [_to(chunk.contiguous(), d) for chunk, d in zip(chunks, devices_)]


def gather(tensors, dim=0, destination=None):
    if destination == -1:
        return torch.cat([t.cpu() for t in tensors], dim)
    target = devices.resolve(destination)
    return torch.cat([_to(t, target) for t in tensors], dim)


def install(patches) -> None:
    for name, value in {
        "_broadcast": broadcast,
        "_broadcast_coalesced": broadcast_coalesced,
        "_scatter": scatter,
        "_gather": gather,
    }.items():
        patches.set(torch._C, name, value)
    import torch.cuda.nccl as nccl

    # reduce_add asks first; a CPU-only build would also warn "not compiled with NCCL support",
    # which a GPU machine does not: answer no, quietly (the fallback adds on the device).
    patches.set(nccl, "is_available", lambda tensors: False)
