"""Which indexing, store, size and condition forms make the host wait for the GPU? (GPU machine)

The measurements behind the linter's store, gather, device-scalar and host-data rules
(docs/sync-forms.md). Each form runs three ways, after one warm-up call:

* under `torch.cuda.set_sync_debug_mode("error")`: does torch itself call it a sync?
* behind ~40 ms of queued GPU work (`torch.cuda._sleep`): how long the host spent in the call,
  over the queued time ("wait"): about 1 means it waited for the queue, about 0 that it did not;
  this also catches what the debug mode does not see (pageable copies staged by the driver);
* under `torch.profiler` (CUDA activities): the runtime calls that block
  (`cudaStreamSynchronize`, `cudaDeviceSynchronize`, `cudaMemcpy` without Async, ...).

    python bench/gpu_sync_forms.py [--json out.json] [--markdown out.md]

Imports only torch (the GPU machine has no syncscope dependencies). On a machine without CUDA it
runs every form on the CPU once, to check that the forms themselves are valid code.
"""

from __future__ import annotations

import argparse
import json
import time

import torch

QUEUED_MS = 40.0
# CUDA runtime calls that return only once the GPU got there (the async copies do not, unless
# the driver stages a pageable buffer, which the wait ratio shows)
BLOCKING_RUNTIME_CALLS = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
                          "cudaMemcpy", "cudaMemcpy2D"}


def make_env(dev: str) -> dict:
    """Fresh tensors for every form (a form may write into them)."""
    n = 64
    host_long = torch.tensor([1, 5, 7])
    env = {
        "dev": dev,
        "x": torch.randn(n, 16, device=dev),
        "t_long": torch.zeros(n, dtype=torch.long, device=dev),
        "t_float": torch.zeros(n, device=dev),
        "t_bool": torch.zeros(n, dtype=torch.bool, device=dev),
        "t2": torch.zeros(8, n, device=dev),
        "idx_dev": host_long.to(dev),
        "idx_host": host_long.clone(),
        "idx_pinned": host_long.pin_memory() if dev == "cuda" else host_long.clone(),
        "idx_host_i32": host_long.to(torch.int32),
        "rows_dev": torch.tensor([0, 1, 2], device=dev),
        "cols_dev": torch.tensor([3, 4, 5], device=dev),
        "rows_host": torch.tensor([0, 1, 2]),
        "cols_host": torch.tensor([3, 4, 5]),
        "mask_dev": torch.arange(n, device=dev) % 2 == 0,
        "mask_host": torch.arange(n) % 2 == 0,
        "start_dev": torch.tensor(2, device=dev),
        "end_dev": torch.tensor(9, device=dev),
        "n_dev": torch.tensor(5, device=dev),
        "n_host": torch.tensor(5),
        "four_dev": torch.tensor(4, device=dev),
        "sizes_dev": torch.tensor([16, 16, 32], device=dev),
        "sizes_host": torch.tensor([16, 16, 32]),
        "scalar_dev": torch.tensor(3.0, device=dev),
        "scalar_host": torch.tensor(3.0),
        "pageable": torch.arange(8, dtype=torch.float32),
        "pinned": (torch.arange(8, dtype=torch.float32).pin_memory() if dev == "cuda"
                   else torch.arange(8, dtype=torch.float32)),
        "data": list(range(8)),
        "i": 7,
        "k": 3,
    }
    return env


def _ignore(_value) -> None:
    return None


def _while_device_condition(e) -> None:
    while e["n_dev"] > 6:
        break


# (group, form as written in serving code, callable). Each callable takes the env.
FORMS = [
    # --- scalar and selection stores into a device tensor
    ("store", "t[0] = 0  (int tensor)", lambda e: e["t_long"].__setitem__(0, 0)),
    ("store", "t[0] = 1.5  (float tensor)", lambda e: e["t_float"].__setitem__(0, 1.5)),
    ("store", "t[i] = n  (Python int i, n)", lambda e: e["t_long"].__setitem__(e["i"], e["k"])),
    ("store", "t[-1] = 0", lambda e: e["t_long"].__setitem__(-1, 0)),
    ("store", "t[0] = True  (bool tensor)", lambda e: e["t_bool"].__setitem__(0, True)),
    ("store", "t2[i, k] = 1.0  (two ints)", lambda e: e["t2"].__setitem__((1, e["k"]), 1.0)),
    ("store", "t2[:, 0] = 0  (int in 2nd dim)", lambda e: e["t2"].__setitem__((slice(None), 0), 0.0)),
    ("store", "t2[0, :] = 0", lambda e: e["t2"].__setitem__((0, slice(None)), 0.0)),
    ("store", "t2[i] = 0  (a whole row)", lambda e: e["t2"].__setitem__(e["k"], 0.0)),
    ("store", "t[..., 0] = 0", lambda e: e["t2"].__setitem__((Ellipsis, 0), 0.0)),
    ("store", "t[0] = dev_0d  (device 0-d value)", lambda e: e["t_float"].__setitem__(0, e["scalar_dev"])),
    ("store", "t[0] = host_0d  (host 0-d tensor value)", lambda e: e["t_float"].__setitem__(0, e["scalar_host"])),
    ("store", "t[n_dev] = 0  (device 0-d index)", lambda e: e["t_long"].__setitem__(e["n_dev"], 0)),
    ("store", "t[n_host] = 0  (host 0-d index)", lambda e: e["t_long"].__setitem__(e["n_host"], 0)),
    ("store", "t[idx_dev] = v_dev  (device index, tensor value)", lambda e: e["t_float"].__setitem__(e["idx_dev"], e["x"][:3, 0])),
    ("store", "t2[idx_dev] = 0  (2-D, device long index: rows)", lambda e: e["t2"].__setitem__(e["idx_dev"], 0.0)),
    ("store", "t2[:, idx_dev] = 0  (2-D, device long index: columns)", lambda e: e["t2"].__setitem__((slice(None), e["idx_dev"]), 0.0)),
    ("store", "t2[:, idx_host] = 0  (2-D, host long index: columns)", lambda e: e["t2"].__setitem__((slice(None), e["idx_host"]), 0.0)),
    ("store", "t2[n_dev] = 0  (2-D, device 0-d index)", lambda e: e["t2"].__setitem__(e["n_dev"], 0.0)),
    ("store", "t2[n_host] = 0  (2-D, host 0-d index)", lambda e: e["t2"].__setitem__(e["n_host"], 0.0)),
    ("store", "t2.index_fill_(1, idx_dev, 0)", lambda e: e["t2"].index_fill_(1, e["idx_dev"], 0.0)),
    ("store", "t[idx_dev] = True  (device long index)", lambda e: e["t_bool"].__setitem__(e["idx_dev"], True)),
    ("store", "t[idx_host] = True  (host long index)", lambda e: e["t_bool"].__setitem__(e["idx_host"], True)),
    ("store", "t[[1, 5, 7]] = 0  (Python list index)", lambda e: e["t_long"].__setitem__([1, 5, 7], 0)),
    ("store", "t[mask_dev] = True  (device bool mask)", lambda e: e["t_bool"].__setitem__(e["mask_dev"], True)),
    ("store", "t[mask_host] = 0  (host bool mask)", lambda e: e["t_long"].__setitem__(e["mask_host"], 0)),
    ("store", "t2[rows_dev, cols_dev] = 1e9", lambda e: e["t2"].__setitem__((e["rows_dev"], e["cols_dev"]), 1e9)),
    ("store", "t2[rows_host, cols_host] = 1e9", lambda e: e["t2"].__setitem__((e["rows_host"], e["cols_host"]), 1e9)),
    ("store", "t2[[0, 1], [3, 4]] = 1e9  (lists)", lambda e: e["t2"].__setitem__(([0, 1], [3, 4]), 1e9)),
    ("store", "t2[i, idx_dev] = 1e9", lambda e: e["t2"].__setitem__((1, e["idx_dev"]), 1e9)),
    ("store", "t[2:9] = 0  (slice, Python bounds)", lambda e: e["t_long"].__setitem__(slice(2, 9), 0)),
    ("store", "t[:] = 0", lambda e: e["t_long"].__setitem__(slice(None), 0)),
    ("store", "t[i:] = 0  (slice from a Python int)", lambda e: e["t_long"].__setitem__(slice(e["i"], None), 0)),
    ("store", "t[0:8] = pageable_host_tensor", lambda e: e["t_float"].__setitem__(slice(0, 8), e["pageable"])),
    ("store", "t[0:8] = pinned_host_tensor", lambda e: e["t_float"].__setitem__(slice(0, 8), e["pinned"])),
    ("store", "t[0:8] = [python list]", lambda e: e["t_float"].__setitem__(slice(0, 8), torch.tensor(e["data"], dtype=torch.float32))),
    ("store", "t[0] += 1", lambda e: e["t_long"].__setitem__(0, e["t_long"][0] + 1)),
    ("store", "t.fill_(0)", lambda e: e["t_long"].fill_(0)),
    ("store", "t[0].fill_(5)", lambda e: e["t_long"][0].fill_(5)),
    ("store", "t.index_fill_(0, idx_dev, 1)", lambda e: e["t_long"].index_fill_(0, e["idx_dev"], 1)),
    ("store", "t.masked_fill_(mask_dev, 0)", lambda e: e["t_long"].masked_fill_(e["mask_dev"], 0)),
    ("store", "t.masked_fill_(mask_dev, dev_0d)", lambda e: e["t_float"].masked_fill_(e["mask_dev"], e["scalar_dev"])),
    ("store", "t.index_put_((idx_host,), v_dev)", lambda e: e["t_float"].index_put_((e["idx_host"],), e["t_float"][:3].clone())),
    # --- gathers
    ("gather", "x[idx_dev]  (device long index)", lambda e: _ignore(e["x"][e["idx_dev"]])),
    ("gather", "x[idx_host]  (pageable host long index)", lambda e: _ignore(e["x"][e["idx_host"]])),
    ("gather", "x[idx_pinned]  (pinned host long index)", lambda e: _ignore(e["x"][e["idx_pinned"]])),
    ("gather", "x[idx_host_i32]  (host int32 index)", lambda e: _ignore(e["x"][e["idx_host_i32"]])),
    ("gather", "x[[1, 5, 7]]  (Python list)", lambda e: _ignore(e["x"][[1, 5, 7]])),
    ("gather", "x[:, idx_host]", lambda e: _ignore(e["x"][:, e["idx_host"][:2]])),
    ("gather", "x[rows_host, cols_host]", lambda e: _ignore(e["x"][e["rows_host"], e["cols_host"]])),
    ("gather", "x[rows_dev, cols_dev]", lambda e: _ignore(e["x"][e["rows_dev"], e["cols_dev"]])),
    ("gather", "x[n_dev]  (device 0-d long index)", lambda e: _ignore(e["x"][e["n_dev"]])),
    ("gather", "x[n_host]  (host 0-d long index)", lambda e: _ignore(e["x"][e["n_host"]])),
    ("gather", "x[mask_dev]  (device bool mask)", lambda e: _ignore(e["x"][e["mask_dev"]])),
    ("gather", "x[mask_host]  (host bool mask)", lambda e: _ignore(e["x"][e["mask_host"]])),
    ("gather", "x.index_select(0, idx_dev)", lambda e: _ignore(e["x"].index_select(0, e["idx_dev"]))),
    ("gather", "torch.gather(x, 1, idx2_dev)", lambda e: _ignore(torch.gather(e["x"], 1, e["rows_dev"].view(3, 1).expand(3, 2).contiguous()))),
    # --- device 0-d values used as sizes, bounds, conditions
    ("scalar", "x[start_dev:end_dev]  (0-d device bounds)", lambda e: _ignore(e["x"][e["start_dev"]:e["end_dev"]])),
    ("scalar", "x[:, start_dev:end_dev]", lambda e: _ignore(e["x"][:, e["start_dev"]:e["end_dev"]])),
    ("scalar", "x[:n_dev]", lambda e: _ignore(e["x"][:e["n_dev"]])),
    ("scalar", "x[:n_host]  (host 0-d bound)", lambda e: _ignore(e["x"][:e["n_host"]])),
    ("scalar", "x.narrow(0, 0, n_dev)", lambda e: _ignore(e["x"].narrow(0, 0, e["n_dev"]))),
    ("scalar", "x.split(sizes_dev.tolist())", lambda e: _ignore(e["x"].split(e["sizes_dev"].tolist()))),
    ("scalar", "x.split(n_dev)  (0-d device split size)", lambda e: _ignore(e["x"].split(e["n_dev"]))),
    ("scalar", "torch.split(x, list(sizes_dev))  (0-d device sizes)", lambda e: _ignore(torch.split(e["x"], list(e["sizes_dev"])))),
    ("scalar", "torch.split(x, sizes_host.tolist())", lambda e: _ignore(torch.split(e["x"], e["sizes_host"].tolist()))),
    ("scalar", "torch.empty(n_dev, device=cuda)", lambda e: _ignore(torch.empty(e["n_dev"], device=e["dev"]))),
    ("scalar", "torch.zeros(n_host, device=cuda)", lambda e: _ignore(torch.zeros(e["n_host"], device=e["dev"]))),
    ("scalar", "torch.arange(n_dev, device=cuda)", lambda e: _ignore(torch.arange(e["n_dev"], device=e["dev"]))),
    ("scalar", "x.new_zeros(n_dev)", lambda e: _ignore(e["x"].new_zeros(e["n_dev"]))),
    ("scalar", "x.view(n_dev, -1)", lambda e: _ignore(e["x"].reshape(-1)[:80].view(e["n_dev"], -1))),
    ("scalar", "x.repeat(n_dev)", lambda e: _ignore(e["t_long"].repeat(e["n_dev"]))),
    ("scalar", "range(n_dev)", lambda e: _ignore(list(range(e["n_dev"])))),
    ("scalar", "torch.full((4,), dev_0d, device=cuda)", lambda e: _ignore(torch.full((4,), e["scalar_dev"], device=e["dev"]))),
    ("scalar", "x * dev_0d  (device 0-d operand)", lambda e: _ignore(e["x"] * e["scalar_dev"])),
    ("scalar", "x * host_0d  (host 0-d operand)", lambda e: _ignore(e["x"] * e["scalar_host"])),
    ("scalar", "torch.clamp(x, max=dev_0d)", lambda e: _ignore(torch.clamp(e["x"], max=e["scalar_dev"]))),
    ("scalar", "if t.any():", lambda e: _ignore(1 if e["t_bool"].any() else 0)),
    ("scalar", "if t.isinf().any():", lambda e: _ignore(1 if e["x"].isinf().any() else 0)),
    ("scalar", "t.any()  (value not read)", lambda e: _ignore(e["t_bool"].any())),
    ("scalar", "while n_dev > 6:", _while_device_condition),
    ("scalar", "x if n_dev > 0 else y", lambda e: _ignore(e["x"] if e["n_dev"] > 0 else None)),
    ("scalar", "int(t.max())", lambda e: _ignore(int(e["t_long"].max()))),
    ("scalar", "t.max().item()", lambda e: _ignore(e["t_long"].max().item())),
    ("scalar", "t.tolist()", lambda e: _ignore(e["t_long"].tolist())),
    ("scalar", "min(n_dev, 4)  (Python min)", lambda e: _ignore(min(e["n_dev"], 4))),
    ("scalar", "torch.minimum(n_dev, four_dev)", lambda e: _ignore(torch.minimum(e["n_dev"], e["four_dev"]))),
    # --- host-built data reaching the device
    ("h2d", "torch.tensor(list, device=cuda)", lambda e: _ignore(torch.tensor(e["data"], device=e["dev"]))),
    ("h2d", "torch.tensor(5, device=cuda)", lambda e: _ignore(torch.tensor(5, device=e["dev"]))),
    ("h2d", "torch.as_tensor(list, device=cuda)", lambda e: _ignore(torch.as_tensor(e["data"], device=e["dev"]))),
    ("h2d", "torch.as_tensor(host_t, device=cuda)", lambda e: _ignore(torch.as_tensor(e["pageable"], device=e["dev"]))),
    ("h2d", "pageable.to(cuda)", lambda e: _ignore(e["pageable"].to(e["dev"]))),
    ("h2d", "pageable.to(cuda, non_blocking=True)", lambda e: _ignore(e["pageable"].to(e["dev"], non_blocking=True))),
    ("h2d", "pinned.to(cuda, non_blocking=True)", lambda e: _ignore(e["pinned"].to(e["dev"], non_blocking=True))),
    ("h2d", "torch.tensor(list, pin_memory=True).to(cuda, non_blocking=True)", lambda e: _ignore(torch.tensor(e["data"], pin_memory=e["dev"] == "cuda").to(e["dev"], non_blocking=True))),
    ("h2d", "dev.copy_(pageable)", lambda e: _ignore(e["t_float"][:8].copy_(e["pageable"]))),
    ("h2d", "dev.copy_(pinned, non_blocking=True)", lambda e: _ignore(e["t_float"][:8].copy_(e["pinned"], non_blocking=True))),
    ("h2d", "x.new_tensor(list)", lambda e: _ignore(e["x"].new_tensor(e["data"]))),
    ("h2d", "torch.full((4,), 5, device=cuda)", lambda e: _ignore(torch.full((4,), 5, device=e["dev"]))),
    ("h2d", "torch.arange(8, device=cuda)", lambda e: _ignore(torch.arange(8, device=e["dev"]))),
    ("h2d", "pageable.cuda()", lambda e: _ignore(e["pageable"].cuda()) if e["dev"] == "cuda" else None),
]


def debug_mode_verdict(fn, env) -> str:
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        fn(env)
        verdict = "-"
    except RuntimeError as exc:
        verdict = "sync" if "synchroniz" in str(exc).lower() else f"error: {str(exc).splitlines()[0][:60]}"
    finally:
        torch.cuda.set_sync_debug_mode(0)
    torch.cuda.synchronize()
    return verdict


def wait_ratio(fn, env, cycles_per_ms: float) -> float:
    """Host time of the call behind QUEUED_MS of GPU work, over QUEUED_MS (median of 3)."""
    ratios = []
    for _ in range(3):
        torch.cuda.synchronize()
        torch.cuda._sleep(int(cycles_per_ms * QUEUED_MS))
        start = time.perf_counter()
        fn(env)
        ratios.append((time.perf_counter() - start) * 1000.0 / QUEUED_MS)
        torch.cuda.synchronize()
    return sorted(ratios)[1]


def profiled_blocking_calls(fn, env, own: frozenset[str] = frozenset()) -> set[str]:
    """Blocking CUDA runtime calls the profiler saw during fn, less `own`: the calls the
    profiler makes itself around an empty body (it synchronizes the device when it stops)."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn(env)
    torch.cuda.synchronize()
    return {evt.key for evt in prof.key_averages() if evt.key in BLOCKING_RUNTIME_CALLS} - own


def cycles_per_ms() -> float:
    torch.cuda._sleep(1_000_000)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rates = []
    for _ in range(3):
        start.record()
        torch.cuda._sleep(10_000_000)
        end.record()
        end.synchronize()
        rates.append(10_000_000 / start.elapsed_time(end))
    return sorted(rates)[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the rows as JSON here")
    parser.add_argument("--markdown", help="write the table as markdown here")
    args = parser.parse_args()
    on_gpu = torch.cuda.is_available()
    dev = "cuda" if on_gpu else "cpu"
    header = {"torch": torch.__version__, "cuda": torch.version.cuda,
              "device": torch.cuda.get_device_name() if on_gpu else "cpu (forms checked only)"}
    rate = cycles_per_ms() if on_gpu else 0.0
    profiler_own = frozenset(profiled_blocking_calls(_ignore, {})) if on_gpu else frozenset()
    header["profiler_own_calls"] = sorted(profiler_own)
    rows = []
    for group, form, fn in FORMS:
        row = {"group": group, "form": form}
        try:
            fn(make_env(dev))  # warm-up: kernels loaded, allocator primed
            if on_gpu:
                row["debug_mode"] = debug_mode_verdict(fn, make_env(dev))
                row["wait"] = round(wait_ratio(fn, make_env(dev), rate), 2)
                row["profiler"] = ", ".join(sorted(profiled_blocking_calls(fn, make_env(dev), profiler_own))) or "-"
                row["syncs"] = row["debug_mode"] == "sync" or row["wait"] > 0.5
        except Exception as exc:  # a form torch rejects is reported, not fatal
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
        rows.append(row)
        print(json.dumps(row), flush=True)
    lines = [f"device: {header['device']}; torch {header['torch']}; CUDA {header['cuda']}; "
             f"queued work {QUEUED_MS:.0f} ms; the profiler's own calls around an empty body, left out: "
             f"{', '.join(header.get('profiler_own_calls', [])) or '-'}", "",
             "| group | form | syncs | set_sync_debug_mode('error') | host wait / queued | blocking runtime calls (profiler) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['group']} | `{row['form']}` | n/a | {row['error']} | | |")
            continue
        lines.append(f"| {row['group']} | `{row['form']}` | {'**yes**' if row.get('syncs') else ('no' if 'syncs' in row else '')} | "
                     f"{row.get('debug_mode', '')} | {row.get('wait', '')} | {row.get('profiler', '')} |")
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as out:
            out.write(table + "\n")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"header": header, "rows": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
