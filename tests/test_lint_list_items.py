"""The items of a local list given tuples or tensors are no Python numbers (list_origins.py).

SGLang 0.5.23's DSv4 v41 indexer (`dense_blocks._torch_publish_prefill`) collects `(rows,
block_ids)` pairs of device tensors in `picked = []` and stores each with `blocks[rows,
: ids.shape[1]] = ids`. A list is a Python value, and a `for` over it bound its items to Python
values too, so SYN406 took `ids` for a Python number stored through an index (a blocking copy of
the number), though it is a device tensor: readers judged it `not a sync` 6 times out of 6.
VALID: a list given tuples, or tensors, gives items of unknown place, and the store is no
finding. INVALID twins: a list given only Python scalars (`len(c)`) still gives Python numbers,
and a list literal of numbers is not followed (it is no `[]` with appends): the store stays.
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

PUBLISH = """
import torch


def pick(scores: torch.Tensor):
    return scores.topk(3).indices


class Indexer(torch.nn.Module):
    def forward(self, x: torch.Tensor, chunks, rows_all: torch.Tensor):
        picked = []
        for chunk in chunks:
            picked.append({item})
        blocks = torch.full((x.shape[0], 4), -1, dtype=torch.int32, device=x.device)
        for {target} in picked:
            blocks[rows_all, :3] = ids
        return blocks
"""

STORE = ("pkg/indexer.py", 16, "SYN406")


def lint(tmp_path, item, target="rows, ids"):
    return where(lint_package(tmp_path, {"indexer.py": PUBLISH.format(item=item, target=target)}))


def test_items_of_a_list_given_tuples_of_tensors_are_no_python_numbers(tmp_path):
    assert STORE not in lint(tmp_path, "(chunk.rows, pick(chunk.scores))")


def test_items_of_a_list_given_tensors_are_no_python_numbers(tmp_path):
    assert STORE not in lint(tmp_path, "pick(chunk.scores)", target="ids")


def test_items_of_a_list_extended_are_not_known_numbers(tmp_path):
    source = PUBLISH.format(item="0", target="ids").replace("picked.append(0)", "picked.extend(pick(chunk.scores))")
    assert STORE not in where(lint_package(tmp_path, {"indexer.py": source}))


def test_items_of_a_list_given_python_scalars_stay_numbers(tmp_path):
    assert STORE in lint(tmp_path, "len(chunk)", target="ids")


def test_items_of_a_list_literal_of_numbers_stay_numbers(tmp_path):
    source = PUBLISH.format(item="0", target="ids").replace("picked = []", "picked = [0, -1]").replace(
        "        for chunk in chunks:\n            picked.append(0)\n", "")
    assert ("pkg/indexer.py", 14, "SYN406") in where(lint_package(tmp_path, {"indexer.py": source}))
