"""Host data the linter took for device data, third pass (issue 24, class 4; branch w-host3;
docs/lint.md, "2026-11-27 (session 5): host data, third pass"): a torch function given
`device="cpu"` that is no factory (`torch.normal`), the rows of a parameter a loop unpacks
(`for t, h, w in grid_thw:`), a nested function reading its enclosing function's parameter (a
closure), and a recursive call passing its own parameter on. Each VALID package has an INVALID
twin where the value is on the device, still reported."""

from __future__ import annotations

from test_lint_host_data import lint_package
from test_lint_host_facts import where


def line(source: str, text: str) -> int:
    return next(i for i, row in enumerate(source.splitlines(), 1) if text in row)


def test_a_torch_function_given_a_host_device_builds_on_the_host(tmp_path):
    # SGLang 0.5.23 spec_utils.sample_simulated_acc_len: `torch.normal(..., device="cpu")`,
    # clamped, then `.item()`: no factory name, yet `device=` says where the result lives
    source = """
        import torch

        class Worker:
            def forward_batch(self, acc_len: float, max_len: int) -> int:
                values = torch.normal(mean=acc_len, std=1.0, size=(1,), device={device})
                values = torch.clamp(values, min=1.0, max=max_len)
                return int(values.round().item())
    """
    assert where(lint_package(tmp_path / "valid", {"m.py": source.format(device='"cpu"')})) == []
    found = where(lint_package(tmp_path / "invalid", {"m.py": source.format(device='"cuda"')}))
    assert found == [("pkg/m.py", line(source, ".item()"), "SYN201")]


# vLLM 0.33.0 openpangu_vl.py: the tower's `rot_pos_emb` unpacks the rows of `grid_thw` and
# sizes `torch.arange(h)` with them; its only caller chain passes a host grid
ROWS = """
    import torch

    class Tower(torch.nn.Module):
        def rot_pos_emb(self, grid_thw: torch.Tensor) -> torch.Tensor:
            pos_ids = []
            for t, h, w in grid_thw:
                pos_ids.append(torch.arange(h).unsqueeze(1).expand(-1, w))
            return torch.cat(pos_ids)

        def forward(self, x: torch.Tensor, grid_thw: torch.Tensor) -> torch.Tensor:
            return x + self.rot_pos_emb(grid_thw)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.visual = Tower()

        def forward(self, x: torch.Tensor, sizes: list) -> torch.Tensor:
            grid = torch.tensor(sizes{device})
            return self.visual(x, grid_thw=grid)
"""


def test_the_rows_of_a_parameter_are_what_the_callers_pass(tmp_path):
    assert where(lint_package(tmp_path / "valid", {"m.py": ROWS.format(device="")})) == []


def test_the_rows_of_a_device_parameter_are_still_reported(tmp_path):
    found = where(lint_package(tmp_path / "invalid", {"m.py": ROWS.format(device=", device=x.device")}))
    assert ("pkg/m.py", line(ROWS, "torch.arange(h)"), "SYN408") in found


# SGLang 0.5.23 spec_utils.traverse_tree: the nested, recursive `dfs` reads `draft_tokens` and
# the bitmask from the enclosing function and is handed `retrieve_next_token` on each call;
# `generate_token_bitmask` passes `.cpu()` copies of all of them
CLOSURE = """
    import torch

    def traverse_tree(next_token: torch.Tensor, draft_tokens: torch.Tensor, bitmask: torch.Tensor, vocab: int):
        def dfs(curr: int, next_token: torch.Tensor, parent: int):
            if curr == 0:
                accepted = True
            else:
                current = draft_tokens[curr]
                if vocab and current >= vocab:
                    accepted = False
                else:
                    accepted = (bitmask[parent][current // 32] & (1 << (current % 32))) != 0
            if accepted and next_token[curr] != -1:
                dfs(int(next_token[curr]), next_token, curr)

        dfs(0, next_token, -1)

    class Worker:
        def forward_batch(self, tokens: torch.Tensor, next_token: torch.Tensor, vocab: int):
            tokens_here = tokens{copy}
            next_here = next_token{copy}
            bitmask = torch.zeros((4, 8), dtype=torch.int32{copy_device})
            traverse_tree(next_here[0], tokens_here[0], bitmask, vocab)
"""


def test_a_closure_over_a_host_parameter_and_a_recursive_call_are_no_sync(tmp_path):
    source = CLOSURE.format(copy=".cpu()", copy_device="")
    found = where(lint_package(tmp_path / "valid", {"m.py": source}))
    # only the two blocking copies the caller makes remain
    assert found == [("pkg/m.py", line(source, "tokens_here ="), "SYN203"),
                     ("pkg/m.py", line(source, "next_here ="), "SYN203")]


def test_a_closure_over_a_device_parameter_is_reported_at_the_caller(tmp_path):
    source = CLOSURE.format(copy=".cuda()", copy_device=", device=tokens.device")
    found = where(lint_package(tmp_path / "invalid", {"m.py": source}))
    assert ("pkg/m.py", line(source, "current >= vocab"), "SYN206") in found  # device draft tokens
    # `next_token[curr] != -1`: the nested function's own parameter, fed by the enclosing one's
    assert ("pkg/m.py", line(source, "!= -1"), "SYN206") in found
    # the caller passes device data into the tree walk
    assert ("pkg/m.py", line(source, "traverse_tree(next_here"), "SYN601") in found


def test_a_closure_shadowed_by_the_nested_functions_own_parameter_is_its_own(tmp_path):
    # `dfs(curr, draft_tokens)` names the value itself: its callers decide, not the enclosing
    # function's (here the nested function is handed a device tensor)
    source = """
        import torch

        def walk(draft_tokens: torch.Tensor):
            def dfs(curr: int, draft_tokens: torch.Tensor):
                if draft_tokens[curr] > 0:
                    return curr
                return -1

            return dfs(0, draft_tokens.cuda())

        class Worker:
            def forward_batch(self, tokens: torch.Tensor):
                return walk(tokens.cpu())
    """
    found = where(lint_package(tmp_path, {"m.py": source}))
    assert ("pkg/m.py", line(source, "draft_tokens[curr] > 0"), "SYN206") in found


# vLLM 0.33.0 ernie45_vl.py: `prepare_encoder_metadata(grid_thw)` replaces a list with a host
# tensor under `not isinstance(...)`, then hands `grid_thw` to `rot_pos_emb`, which unpacks its
# rows; the tower is fed a host grid by one caller and a device copy by another
# (`encoder_eager_forward`, `async_tensor_h2d(...)`): a real sync on that path
ERNIE = """
    import torch

    class Tower(torch.nn.Module):
        def rot_pos_emb(self, grid_thw: torch.Tensor) -> torch.Tensor:
            pos_ids = []
            for t, h, w in grid_thw:
                pos_ids.append(torch.arange(h, device=self.w.device))
            return torch.cat(pos_ids)

        def prepare_encoder_metadata(self, grid_thw, device=None):
            if not isinstance(grid_thw, torch.Tensor):
                grid_thw = torch.tensor(grid_thw, dtype=torch.int32)
            return {{"rot": self.rot_pos_emb(grid_thw).to(device)}}

        def forward(self, x: torch.Tensor, grid_thw: torch.Tensor):
            return x + self.prepare_encoder_metadata(grid_thw, device=x.device)["rot"]

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.vision_model = Tower()

        def encoder_eager_forward(self, mm_kwargs: dict) -> torch.Tensor:
            grid_thw = mm_kwargs["image_grid_thw"]{copy}
            return self.vision_model(mm_kwargs["pixel_values"], grid_thw)

        def forward(self, x, grid_thw_cpu):
            return self.vision_model(x, grid_thw_cpu)
"""


def test_a_parameter_replaced_by_host_data_in_one_arm_is_still_the_parameters_in_the_call_facts(tmp_path):
    source = ERNIE.format(copy=".cuda()")
    found = where(lint_package(tmp_path / "invalid", {"m.py": source}))
    assert ("pkg/m.py", line(source, "torch.arange(h"), "SYN408") in found
    source = ERNIE.format(copy=".cpu()")
    found = where(lint_package(tmp_path / "valid", {"m.py": source}))
    assert ("pkg/m.py", line(source, "torch.arange(h"), "SYN408") not in found


def test_the_items_of_a_list_parameter_are_not_the_callers_data(tmp_path):
    # vLLM 0.33.0 evs.recompute_mrope_positions: `for mm_pos in multimodal_positions:` over a
    # `list[torch.Tensor]` its callers build from device embeddings; a caller passing a list
    # (a Python value) says nothing of where its items live: the sync stays
    source = """
        import torch

        def recompute(multimodal_positions: list[torch.Tensor]) -> int:
            n = 0
            for mm_pos in multimodal_positions:
                if torch.any(mm_pos[4, :]).item():
                    n += 1
            return n

        class Model(torch.nn.Module):
            def forward(self, embeds: list[torch.Tensor]):
                return recompute([mm[:, -5:].permute(1, 0).long() for mm in embeds])
    """
    found = where(lint_package(tmp_path, {"m.py": source}))
    assert ("pkg/m.py", line(source, ".item()"), "SYN201") in found


# vLLM 0.33.0 mimo_v2_omni.py: the tower's `forward` makes a host tensor of the Python list its
# callers pass (`grid_thw_list = image_grid_thw.tolist()`) and hands it to `rot_pos_emb`,
# which reads its rows with `int(...)`; a Python value passed for such a parameter is host data
# one call down, not only host memory
MIMO = """
    import torch

    class Tower(torch.nn.Module):
        def rot_pos_emb(self, grid_thw: torch.Tensor):
            out = []
            for i in range(grid_thw.size(0)):
                h = int(grid_thw[i, 1])
                out.append(torch.arange(h))
            return out

        def forward(self, x: torch.Tensor, grid_thw: torch.Tensor):
            if not isinstance(grid_thw, torch.Tensor):
                grid_thw = torch.tensor(grid_thw, dtype=torch.long)
            return self.rot_pos_emb(grid_thw)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.visual = Tower()

        def forward(self, x, image_grid_thw: torch.Tensor):
            return self.visual(x, grid_thw=image_grid_thw{passed})
"""


def test_a_python_list_made_a_host_tensor_one_call_up_is_host_data(tmp_path):
    source = MIMO.format(passed=".tolist()")
    found = where(lint_package(tmp_path / "valid", {"m.py": source}))
    assert found == [("pkg/m.py", line(source, ".tolist()"), "SYN202")]  # the caller's own read


def test_a_device_grid_passed_through_the_same_conversion_is_still_reported(tmp_path):
    source = MIMO.format(passed="")
    found = where(lint_package(tmp_path / "invalid", {"m.py": source}))
    assert ("pkg/m.py", line(source, "h = int("), "SYN205") in found
