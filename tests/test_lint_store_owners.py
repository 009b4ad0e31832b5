"""Issue 25's store misses, each on a small package linted whole with the default per-step scope:
a device field told apart by its owner's class when another class has a field of the same name
that is no tensor (owner_fields.py), and a stored parameter that a per-step caller passes a
Python number for (python_args.py)."""

from __future__ import annotations

from test_lint_scope import lint_package, where

# SGLang 0.5.22 `MambaPool`: the state tensors live in a nested dataclass built in the pool's
# constructor; config classes elsewhere have fields of the same names that are shapes.
POOL = """
    import torch
    from dataclasses import dataclass
    from typing import List

    class MambaPool:
        @dataclass
        class State:
            conv: List[torch.Tensor]
            temporal: torch.Tensor

        def __init__(self, size, device):
            conv_state = [torch.zeros((2, size, 3), device=device) for _ in range(2)]
            temporal_state = torch.zeros((2, size, 4), device=device)
            self.mamba_cache = self.State(conv=conv_state, temporal=temporal_state)

        def clear_slots(self, indices: torch.Tensor):
            temporal = self.mamba_cache.temporal
            temporal[:, indices] = 0
            for i in range(len(self.mamba_cache.conv)):
                t = self.mamba_cache.conv[i]
                t[:, indices] = 0
"""
SHAPES = """
    from dataclasses import dataclass

    @dataclass
    class MambaStateShape:
        conv: list[tuple[int, int]]
        temporal: tuple[int, int, int]
"""
RUNNER = """
    import torch

    class Runner(torch.nn.Module):  # a module: its forward runs every step
        def forward(self, pool, indices: torch.Tensor):
            pool.clear_slots(indices)
"""


def test_a_field_of_the_owners_class_is_a_device_tensor_when_the_name_is_not(tmp_path):
    run = lint_package(tmp_path, {"pool.py": POOL, "shapes.py": SHAPES, "runner.py": RUNNER})
    assert ("pkg/pool.py", 19, "SYN406") in where(run)  # temporal[:, indices] = 0
    assert ("pkg/pool.py", 22, "SYN406") in where(run)  # t[:, indices] = 0, t from conv[i]


# A subclass of the pool that fills the field with a subclass of the state kept on the host.
HOST_SUBCLASSES = """
    class HostState(MambaPool.State):
        def __init__(self, size):
            self.temporal = torch.zeros((2, size, 4)).pin_memory()

    class HostPool(MambaPool):
        def __init__(self, size):
            self.mamba_cache = HostState(size)
"""


def test_the_owner_rule_stays_quiet_when_a_subclass_keeps_the_field_on_the_host(tmp_path):
    # `self.mamba_cache` may be either state, so the field is not known to be a device tensor
    with_host = POOL + HOST_SUBCLASSES
    run = lint_package(tmp_path, {"pool.py": with_host, "shapes.py": SHAPES, "runner.py": RUNNER})
    assert ("pkg/pool.py", 19, "SYN406") not in where(run)


def test_an_owner_whose_field_class_is_unknown_is_no_evidence(tmp_path):
    unknown = POOL.replace("self.mamba_cache = self.State(conv=conv_state, temporal=temporal_state)",
                           "self.mamba_cache = build_state(conv_state, temporal_state)")
    run = lint_package(tmp_path, {"pool.py": unknown, "shapes.py": SHAPES, "runner.py": RUNNER})
    assert ("pkg/pool.py", 19, "SYN406") not in where(run)


def test_a_host_field_of_the_owners_class_is_not_flagged(tmp_path):
    host = POOL.replace("temporal_state = torch.zeros((2, size, 4), device=device)",
                        "temporal_state = torch.zeros((2, size, 4))")
    run = lint_package(tmp_path, {"pool.py": host, "shapes.py": SHAPES, "runner.py": RUNNER})
    assert ("pkg/pool.py", 19, "SYN406") not in where(run)
    assert ("pkg/pool.py", 22, "SYN406") in where(run)


# SGLang 0.5.22 `set_mamba_ping_pong_slot`: a 1-D device buffer of the request, a value that the
# per-step result processor passes as `-1`.
SLOTS = """
    import torch

    class HybridPool:
        def alloc_track(self, req, n, device):
            buf = torch.full((n,), -1, dtype=torch.int64, device=device)
            req.kv.track_buffer = buf

        def set_slot(self, req, idx: int, value):
            req.kv.track_buffer[idx] = value
"""


def _processor(step_args: str, setup_args: str | None = None) -> str:
    setup = f"""
        def __init__(self, batch, req):
            batch.pool.set_slot({setup_args})
""" if setup_args else ""
    return f"""
    class ResultProcessor:{setup}
        def process_batch_result(self, batch, req, idx):
            pool = batch.pool
            pool.set_slot({step_args})
"""


def test_a_stored_parameter_is_a_number_when_a_per_step_caller_passes_one(tmp_path):
    run = lint_package(tmp_path, {"slots.py": SLOTS, "results.py": _processor("req, idx, -1")})
    assert ("pkg/slots.py", 10, "SYN404") in where(run)
    run = lint_package(tmp_path, {"slots.py": SLOTS, "results.py": _processor("req, idx, value=0")})
    assert ("pkg/slots.py", 10, "SYN404") in where(run)


def test_a_stored_parameter_that_callers_pass_tensors_for_is_not_flagged(tmp_path):
    run = lint_package(tmp_path, {"slots.py": SLOTS, "results.py": _processor("req, idx, batch.new_slot[0]")})
    assert ("pkg/slots.py", 10, "SYN404") not in where(run)
    # the number is the index, not the value
    run = lint_package(tmp_path, {"slots.py": SLOTS, "results.py": _processor("req, 0, batch.new_slot[0]")})
    assert ("pkg/slots.py", 10, "SYN404") not in where(run)


def test_a_number_passed_in_set_up_code_only_is_not_a_per_step_store(tmp_path):
    run = lint_package(tmp_path, {"slots.py": SLOTS,
                                  "results.py": _processor("req, idx, batch.new_slot[0]", setup_args="req, 0, -1")})
    assert ("pkg/slots.py", 10, "SYN404") not in where(run)


# vLLM 0.30.0 `mamba_mixer2`: the layer's forward calls a registered custom op, whose function
# looks the layer up and calls its method through a *local* named `self`.
MIXER = """
    import torch

    class MambaMixer2(torch.nn.Module):
        def forward(self, x: torch.Tensor, out: torch.Tensor):
            torch.ops.vllm.mamba_mixer2(x, out, "layer.0")

        def conv_ssm_forward(self, x: torch.Tensor, out: torch.Tensor):
            firsts = x.tolist()
            return firsts

    def mamba_mixer2(x: torch.Tensor, out: torch.Tensor, layer_name: str) -> None:
        self = get_forward_context().no_compile_layers[layer_name]
        self.conv_ssm_forward(x, out)
"""


def test_a_method_called_through_a_local_named_self_is_reached(tmp_path):
    run = lint_package(tmp_path, {"mixer.py": MIXER})
    assert ("pkg/mixer.py", 9, "SYN202") in where(run)


def test_a_closure_of_a_method_still_resolves_self_through_the_class(tmp_path):
    # `self` of the enclosing method: not a receiver of unknown class, so no dispatch by name
    # to the other class's `conv_ssm_forward`
    run = lint_package(tmp_path, {"mixer.py": """
        import torch

        class Other:
            def conv_ssm_forward(self, x: torch.Tensor):
                return x.tolist()

        class Layer(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                def inner():
                    return self.conv_ssm_forward(x)
                return inner()

            def conv_ssm_forward(self, x: torch.Tensor):
                return x
    """})
    assert ("pkg/mixer.py", 5, "SYN202") not in where(run)
