"""examples/serve_loop.py: both impls do the same work; under syncscope only naive syncs in steps."""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import importlib.util  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "serve_loop.py"
HAS_CUDA = torch.cuda.is_available()
SMALL = ["--steps", "6", "--warmup", "2", "--hidden", "64", "--layers", "1", "--max-batch", "8", "--max-tokens", "512"]


def require_detector() -> None:
    """Skip only while the detector this machine needs is not there yet."""
    module, name = ("syncscope.runtime.cuda", "CudaDetector") if HAS_CUDA else ("syncscope.runtime.sim", "SimulatedCudaDetector")
    if not hasattr(pytest.importorskip(module), name):
        pytest.skip(f"{module}.{name} does not exist yet")


def load_example():
    spec = importlib.util.spec_from_file_location("serve_loop_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_example_is_cuda_code_without_syncscope_or_fallbacks():
    source = EXAMPLE.read_text()
    assert not re.search(r"^\s*(import|from)\s+syncscope", source, re.M)
    assert "is_available" not in source
    assert 'default="cuda"' in source.replace("Config.device", '"cuda"') or 'device: str = "cuda"' in source


@pytest.mark.parametrize(
    "device",
    [
        pytest.param("cpu", id="cpu"),
        pytest.param("cuda", id="cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="needs CUDA")]),
    ],
)
def test_naive_and_fixed_generate_the_same_tokens(device, capsys):
    if device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("Triton runs CPU tensors only in its interpreter")
    example = load_example()
    naive = example.main(SMALL + ["--impl", "naive", "--device", device, "--seed", "7"])
    fixed = example.main(SMALL + ["--impl", "fixed", "--device", device, "--seed", "7"])
    assert naive["tokens"] == fixed["tokens"] > 0
    assert naive["requests_finished"] == fixed["requests_finished"]
    assert "tokens/s=" in capsys.readouterr().out


@pytest.mark.gpu if HAS_CUDA else (lambda f: f)
def test_under_the_trap_only_naive_syncs_inside_steps():
    require_detector()
    import syncscope

    example = load_example()
    sites = {}
    for impl in ("naive", "fixed"):
        with syncscope.trap(device="cuda" if HAS_CUDA else "sim") as t:
            example.main(SMALL + ["--impl", impl, "--device", "cuda"])
        sites[impl] = {(Path(e.site.path).name, e.site.function) for e in t.events}
    end_reads = {(EXAMPLE.name, "ServeLoop.run")}  # the end-of-warm-up and end-of-run token-count reads
    assert sites["fixed"] <= end_reads, sites["fixed"]
    naive_builder_sites = sites["naive"] - end_reads
    assert {name for name, _ in naive_builder_sites} >= {
        "gdn_spec_decode.py",
        "gdn_chunk_indices.py",
        "seq_lens_upper_bound.py",
        "async_spec_decode.py",
    }, naive_builder_sites
