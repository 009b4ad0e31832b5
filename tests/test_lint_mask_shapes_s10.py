"""A boolean mask reshaped is still a mask (context.is_bool, `SHAPE_METHODS`): a mask put
through `unsqueeze` / `expand_as` / `view` / `permute` / ... or indexed (`mask[:, None]`) holds
the same booleans. So `out[mask.unsqueeze(-1).expand_as(out)] = 0.0` is a masked fill on the
device (PyTorch's `index_put_` dispatches a bool mask on the tensor's device and a Python number
to `masked_fill_`: no copy, no wait), while a read or a tensor store through it still counts the
mask on the host (SGLang's `flash_mla_sm120.py`). Each VALID package leaves the store out of the
report; each INVALID twin keeps a finding on it."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

OPS = """
    import torch

    def decode(q: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
        scores = torch.einsum("bhd,btd->bht", q, kv)
        lse = torch.logsumexp(scores, dim=-1)
        lonely = lse == float("-inf")
        out = torch.einsum("bht,btd->bhd", torch.exp(scores), kv)
        out[lonely.unsqueeze(-1).expand_as(out)] = 0.0
        return out
"""

MODEL = """
    import torch
    from pkg.ops import decode

    class Model(torch.nn.Module):
        def forward(self, q: torch.Tensor, kv: torch.Tensor):
            return decode(q, kv)
"""

STORE_LINE = 9  # the store in `decode`
CALL_LINE = 7  # `decode(q, kv)` in the model


def package(ops=OPS):
    return {"ops.py": ops, "model.py": MODEL}


def test_a_python_number_stored_through_a_reshaped_mask_is_a_masked_fill(tmp_path):
    run = lint_package(tmp_path, package())
    assert STORE_LINE not in lines(run, "pkg/ops.py")
    assert CALL_LINE not in lines(run, "pkg/model.py")


def test_a_python_number_stored_through_an_indexed_mask_is_a_masked_fill(tmp_path):
    ops = OPS.replace("lonely.unsqueeze(-1).expand_as(out)", "lonely[:, :, None]")
    run = lint_package(tmp_path, package(ops))
    assert STORE_LINE not in lines(run, "pkg/ops.py")


def test_a_reshaped_mask_kept_in_a_name_is_a_mask(tmp_path):
    ops = OPS.replace("        out[lonely.unsqueeze(-1).expand_as(out)] = 0.0\n",
                      "        wide = lonely.unsqueeze(-1).expand_as(out)\n        out[wide] = 0.0\n")
    run = lint_package(tmp_path, package(ops))
    assert STORE_LINE + 1 not in lines(run, "pkg/ops.py")


def test_a_reshaped_integer_index_still_copies_the_number(tmp_path):
    # `argmax` gives positions, not booleans: `index_put_` copies the number (SYN406 stays)
    ops = OPS.replace('lonely = lse == float("-inf")', "lonely = torch.argmax(lse, dim=-1)")
    run = lint_package(tmp_path, package(ops))
    assert STORE_LINE in lines(run, "pkg/ops.py")
    assert CALL_LINE in lines(run, "pkg/model.py")


def test_a_tensor_stored_through_a_reshaped_mask_still_counts_it(tmp_path):
    ops = OPS.replace("expand_as(out)] = 0.0", "expand_as(out)] = out.mean()")
    run = lint_package(tmp_path, package(ops))
    assert STORE_LINE in lines(run, "pkg/ops.py")


def test_a_read_through_a_reshaped_mask_still_counts_it(tmp_path):
    ops = OPS.replace("        out[lonely.unsqueeze(-1).expand_as(out)] = 0.0\n        return out\n",
                      "        return out[lonely.unsqueeze(-1).expand_as(out)]\n")
    run = lint_package(tmp_path, package(ops))
    assert STORE_LINE in lines(run, "pkg/ops.py")
