"""Stand-ins for FlashInfer's compiled planning calls, so vLLM's FlashInfer metadata builder runs on
the simulated device with FlashInfer's own Python `plan()` methods unchanged.

What the builder calls: `BatchPrefillWithPagedKVCacheWrapper.plan` (prefills on the FlashInfer
native path) and `BatchDecodeWithPagedKVCacheWrapper.plan` (through vLLM's `fast_plan_decode`;
decodes on the native path). Those are Python: they copy the page-table arrays to the device,
read host copies of the index pointers, derive the KV lengths, pick a backend, then fetch a
JIT-compiled module (`get_batch_prefill_module` / `get_batch_decode_module`, which would build
CUDA sources with nvcc) and call its `plan(...)`. Only that last step is replaced here:

- `get_batch_prefill_module` / `get_batch_decode_module` (in `flashinfer.prefill` and
  `flashinfer.decode`, where the wrappers look them up) return `PlanOnlyModule`, whose `plan` does
  what the compiled one does that a host sync detector can see: it writes the scheduling arrays
  into the wrapper's page-locked host buffer and queues one asynchronous pinned host->device copy
  of them into the device int workspace (FlashInfer's `PrefillPlan`/`DecodePlan` end with a
  `cudaMemcpyAsync` from that page-locked buffer; they do not synchronize), and returns a plan-info
  list. Its scheduling (the split-KV search over the host `kv_len` array: pure host arithmetic) is
  not reproduced: what lands in the workspace is placeholder numbers, which nothing here runs.
- `determine_attention_backend` is FlashInfer's own, asked with the CUDA version an H100 build has
  (CUDA torch wheels report 12.x; the CPU torch here reports None, which FlashInfer's version
  check cannot parse). The answer picks fa3 or fa2, and so which host arrays `plan()` prepares.
- vLLM's `has_nvidia_artifactory()` (whether the TRT-LLM/XQA cubins can be downloaded) answers
  True, as on a serving machine with its kernels: this box has no network, and without the cubins
  vLLM would choose other kernels than it does in production.

Not seen with these stand-ins: whatever the compiled planning does inside C++ (its host loops, a
`cudaStreamSynchronize` if a FlashInfer release added one, the size checks on the workspace), and
everything the wrappers' `run()` does (not called by a builder). The TRT-LLM and XQA paths call no
planning at all in `build`: what they need is on the device already.
"""

from __future__ import annotations

import torch

_PLAN_INFO_LEN = 16  # FlashInfer's PrefillPlanInfo/DecodePlanInfo vectors are about this long


class PlanOnlyModule:
    """What the builder's `plan()` reaches of a JIT module: `plan(...)`. Any other use (a kernel
    run) fails loudly, so a script cannot silently depend on a kernel that did not run."""

    def __init__(self, kind: str, args: tuple):
        self.kind = kind
        self.args = args
        self.calls = 0

    def plan(self, float_workspace, int_workspace, pinned_int_workspace, *rest):
        # The host side of the compiled plan: scheduling arrays written into the page-locked
        # buffer (here: the batch's index pointer, so the bytes are the batch's own), then one
        # cudaMemcpyAsync of them into the device int workspace on the current stream.
        self.calls += 1
        host_indptr = next((a for a in rest if isinstance(a, torch.Tensor) and a.device.type == "cpu"), None)
        n = 0
        if host_indptr is not None:
            n = host_indptr.numel() * host_indptr.element_size()
            pinned_int_workspace[:n].copy_(host_indptr.contiguous().view(torch.uint8))
        int_workspace[: max(n, 1)].copy_(pinned_int_workspace[: max(n, 1)], non_blocking=True)
        return [0] * _PLAN_INFO_LEN

    def __getattr__(self, name):
        raise RuntimeError(f"flashinfer_standins: the {self.kind} module's {name!r} is compiled code, "
                           "not available on the simulated device (only plan() is stood in)")


def _module_getter(kind: str):
    modules: dict[tuple, PlanOnlyModule] = {}

    def get_module(*args):
        # cached per argument tuple, as FlashInfer's functools.cache'd getters are
        return modules.setdefault(args, PlanOnlyModule(kind, args))

    return get_module


def install(cuda_version: str = "12.9") -> None:
    """Put the stand-ins in place (after `sim_boot.boot`, before any builder is made)."""
    import flashinfer.decode
    import flashinfer.prefill
    import flashinfer.utils
    import vllm.utils.flashinfer as vllm_flashinfer

    prefill_getter = _module_getter("batch prefill")
    flashinfer.prefill.get_batch_prefill_module = prefill_getter
    flashinfer.decode.get_batch_prefill_module = prefill_getter  # tensor-core decode plans with it
    flashinfer.decode.get_batch_decode_module = _module_getter("batch decode")

    real_determine = flashinfer.utils.determine_attention_backend

    def determine_attention_backend(*args, **kwargs):
        saved = torch.version.cuda
        torch.version.cuda = cuda_version
        try:
            return real_determine(*args, **kwargs)
        finally:
            torch.version.cuda = saved

    for module in (flashinfer.prefill, flashinfer.decode):
        if hasattr(module, "determine_attention_backend"):
            module.determine_attention_backend = determine_attention_backend

    vllm_flashinfer.has_nvidia_artifactory = lambda: True
