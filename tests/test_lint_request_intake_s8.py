"""Request intake (`[roots] request-intake`, reachability.py `per_request_intake`): the step loop
calls `add_request` / `process_input_requests` to take in the requests that arrived since the
last step, each once. What only they reach runs once per request (hashing a request's
multimodal input, copying its prompt into a device table), not per step, and a call into them
does not sync for the step that makes it. Small packages: the engine loop in one module, the
request intake and its helpers in others."""

from __future__ import annotations

from test_lint_scope import lint_package

HELPERS = """
    import torch

    def hash_feature(feature: torch.Tensor) -> int:
        return int(feature.sum().item())

    def lengths(seq_lens: torch.Tensor) -> list:
        return seq_lens.tolist()
"""

TABLES = """
    import torch
    from pkg.helpers import hash_feature

    class RequestTable:
        def __init__(self, device):
            self.tokens = torch.zeros((64, 128), dtype=torch.int64, device=device)

        def add_request(self, row: int, prompt: list, feature: torch.Tensor):
            self.tokens[row, : len(prompt)] = torch.tensor(prompt, device=self.tokens.device)
            return hash_feature(feature)
"""

ENGINE = """
    import torch
    from pkg.helpers import lengths
    from pkg.tables import RequestTable

    class Engine:
        def __init__(self):
            self.table = RequestTable("cuda")

        def process_input_requests(self, reqs):
            for req in reqs:
                self.table.add_request(req.row, req.prompt, req.feature)

        def execute_model(self, reqs, seq_lens: torch.Tensor):
            self.process_input_requests(reqs)
            return lengths(seq_lens)
"""


def lines_of(run, path: str) -> dict[int, str | None]:
    """line -> why it is cold (None: per step)."""
    return {f.site.line: f.cold for f in run.findings if f.site.path == path}


def test_what_request_intake_reaches_runs_once_per_request(tmp_path):
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "tables.py": TABLES, "engine.py": ENGINE},
                       include_cold=True)
    helpers, tables, engine = (lines_of(run, f"pkg/{name}.py") for name in ("helpers", "tables", "engine"))
    # VALID (cold): the prompt copied into the device table and the feature's hash, once per
    # request, and the intake's call into the table; the step's call into the intake does not
    # sync for the step (no finding at engine.py:15)
    assert tables.get(10) and "takes in new requests" in tables[10], tables
    assert helpers.get(5) and "takes in new requests" in helpers[5], helpers
    assert engine.get(12) and "takes in new requests" in engine[12], engine
    assert 15 not in engine, engine
    # INVALID (per step): the step's own readback, and its call into the helper
    assert 8 in helpers and helpers[8] is None, helpers
    assert 16 in engine and engine[16] is None, engine


def test_a_helper_per_step_code_also_reaches_stays_per_step(tmp_path):
    # INVALID twin: the step also hashes a feature itself: the helper is per step
    engine = ENGINE.replace("return lengths(seq_lens)", "return lengths(seq_lens), hash_feature(seq_lens)") \
        .replace("from pkg.helpers import lengths", "from pkg.helpers import hash_feature, lengths")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "tables.py": TABLES, "engine.py": engine},
                       include_cold=True)
    helpers, tables = lines_of(run, "pkg/helpers.py"), lines_of(run, "pkg/tables.py")
    assert 5 in helpers and helpers[5] is None, helpers
    assert tables.get(10) and "takes in new requests" in tables[10], tables
    # and a function merely named like intake by a word (`add_requests_metric`) is no intake
    renamed = ENGINE.replace("process_input_requests", "account_requests_metric")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "tables.py": TABLES, "engine.py": renamed},
                       include_cold=True)
    tables = lines_of(run, "pkg/tables.py")
    assert tables.get(10) and "takes in new requests" in tables[10], tables  # `add_request` itself
    renamed = renamed.replace("add_request(", "store_request(")
    tables_src = TABLES.replace("def add_request(", "def store_request(")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "tables.py": tables_src, "engine.py": renamed},
                       include_cold=True)
    tables = lines_of(run, "pkg/tables.py")
    assert 10 in tables and tables[10] is None, tables


# a diffusion stage that switches the LoRA adapter between two phases of a request (SGLang's
# LTX-2 two-stage pipeline): `set_lora` writes the adapter's weights into every layer, in a loop
LORA = """
    import torch
    from pkg.base import PipelineStage

    class LoRAPipeline:
        def __init__(self, layers: list):
            self.layers = layers

        def set_lora(self, name: str, scale: float):
            for layer in self.layers:
                layer.weight[0] = scale
                if layer.weight.abs().max().item() > 1e4:
                    raise ValueError(name)

    class LoRASwitchStage(PipelineStage):
        def __init__(self, pipeline: LoRAPipeline):
            self.pipeline = pipeline

        def forward(self, batch, server_args):
            for phase in batch.phases:
                self.pipeline.set_lora(phase, 0.5)
            return batch
"""


def test_an_adapter_switch_from_a_stage_runs_once_per_request(tmp_path):
    from test_lint_request_entries import BASE

    run = lint_package(tmp_path, {"base.py": BASE, "lora.py": LORA}, include_cold=True)
    found = lines_of(run, "pkg/lora.py")
    # VALID (cold): the readback in `set_lora`'s loop over layers, once per adapter switch
    assert found.get(12) and "takes in new requests" in found[12], found
    # INVALID twin: the same loop under another name, called in the denoising loop: per step
    renamed = LORA.replace("set_lora", "apply_weights").replace("for phase in batch.phases:",
                                                                "for i, t in enumerate(batch.timesteps):") \
        .replace("apply_weights(phase, 0.5)", "apply_weights(t, 0.5)")
    found = lines_of(lint_package(tmp_path, {"base.py": BASE, "lora.py": renamed}, include_cold=True), "pkg/lora.py")
    assert 12 in found and found[12] is None, found
