"""Syncs the two detectors must name alike although no Python-level shim of the real-GPU detector
wraps the call that raises them (tests/test_unshimmed_syncs.py runs it on the simulated device,
and on a GPU under `pytest -m gpu`), and copies of no element, which are no syncs at all.

Each case line ends with `# expect: <kind>` or `# expect: none`, read by
tests/catalog/expectations.py, so no line number is written down twice.
"""

import torch


def run_cases(device: str = "cuda") -> None:
    x = torch.arange(6.0, device=device)
    n = torch.tensor(2, device=device)  # expect: h2d_copy
    half = torch.tensor(0.5, device=device)  # expect: h2d_copy

    # -- a copy of no element moves nothing: ATen's copy_ returns before any transfer -----------
    torch.tensor([], device=device)  # expect: none
    torch.tensor([[], []], device=device)  # expect: none
    x.new_tensor([])  # expect: none
    torch.empty(0, 3).to(device)  # expect: none
    torch.empty(0).to(device, non_blocking=True)  # expect: none
    torch.empty(0, device=device).cpu()  # expect: none
    torch.empty(0, device=device).tolist()  # expect: none

    # -- a device scalar read by torch's C++ argument parser (a Scalar, an int list, a SymInt) --
    # No Python code runs between the call and the sync, so no shim sees it: `other`.
    torch.full((2,), fill_value=n, device=device)  # expect: other
    torch.full((2,), n, device=device)  # expect: other
    torch.arange(n, device=device)  # expect: other
    x.view(n, -1)  # expect: other
    torch.topk(x, n)  # expect: other
    x.equal(x + 1)  # expect: other
    # (two distinct tensors, so that no shortcut of torch's for an alias can skip the read)

    # -- ... through Python's number protocol (an int or float argument, a slice bound) ----------
    # The parser calls the tensor's `__index__` / `__float__`, which the shims wrap: `item`.
    x.softmax(dim=n - 2)  # expect: item
    torch.dropout(x, half, False)  # expect: item
    x[:n]  # expect: item
    n.item()  # expect: item
    int(n)  # expect: item


if __name__ == "__main__":
    run_cases()
    print("cases done")
