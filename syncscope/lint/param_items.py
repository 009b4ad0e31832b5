"""The items of a list a helper takes as a parameter (issue 24, "host data taken for device
data").

vLLM's GLM-ASR normalizes its `chunk_counts` in a helper of another module:

    def _as_list_chunk_counts(chunk_counts: torch.Tensor | list[int] | list[torch.Tensor]):
        if isinstance(chunk_counts, torch.Tensor):
            return chunk_counts.tolist()
        if chunk_counts and isinstance(chunk_counts[0], torch.Tensor):
            tensor_counts = cast(list[torch.Tensor], chunk_counts)
            return [int(c.item()) for c in tensor_counts]
        return [int(c) for c in chunk_counts]

Whether `c.item()` syncs depends on where the items of the list live, which only the callers
tell. A caller passing a Python list says nothing of its items (a list of CUDA tensors is a
Python value too), so a plain Python value is not enough; but every caller here passes
`audio_input.get("chunk_counts")`, a field the model declares `keep_on_cpu=True`: host memory,
a CPU tensor or a list of CPU tensors (a batched field whose items differ in shape), so its
items are on the host as well.

So an item a loop or a comprehension takes from a parameter's container is "the items of
that parameter" (`chunk_counts` + ITEMS), a source of its own: a finding on it is dropped when
every call in the tree passes host memory for the parameter (wholeprogram.host_fed's `host`,
not its `fed`, which also takes Python values), and a call passing anything else (a list, a
tensor of unknown place, the caller's own parameter's items) still syncs. Rows of a tensor
parameter (`for t, h, w in grid_thw:`) stay the parameter itself (evaluate.bind_loop).

A name that is host only by a container word (`neg_masks_list`, provenance.CONTAINER_WORDS) is
a Python list: host data for the parameter itself, but no host memory for its items (the call
facts mark it, fact_values.NAMED_LIST; SGLang's `_seq_lens_from_masks(neg_masks_list)` of
CUDA masks had been dropped by the `_list` convention).
"""

from __future__ import annotations

ITEMS = "[]"  # suffix of a parameter's name: the items of the container passed for it


def items_source(source) -> str | tuple | None:
    """The source of an item taken from a value whose source is `source` (a parameter name, or
    (enclosing function, parameter) for a closure); None for what is already an item (the
    items of items: nested lists say even less)."""
    if isinstance(source, tuple):
        function, param = source
        return None if param.endswith(ITEMS) else (function, param + ITEMS)
    if source is None or source.endswith(ITEMS):
        return None
    return source + ITEMS


def is_items(param: str) -> bool:
    return param.endswith(ITEMS)


def container_of(param: str) -> str:
    """`chunk_counts` for `chunk_counts[]`."""
    return param[:-len(ITEMS)]


def items_argument(where, follows):
    """What a call passes for the items of a parameter, given what it passes for the parameter
    (where, caller parameter it follows): host memory has host items; a caller passing its own
    parameter on passes that parameter's items (tensors when it is typed a tensor); anything
    else (a Python list, a tensor) may hold device tensors."""
    from . import provenance as P

    if follows is not None:
        items = items_source(follows)
        if items is None:
            return (P.TENSOR, None)
        # the rows of a parameter typed as a tensor are tensors: such a call is flagged where
        # it is written, as for the parameter itself (wholeprogram `findings`), unless every
        # call into the caller feeds it host memory
        return (P.TENSOR if P.is_tensor_like(where) else P.UNKNOWN, items)
    return (P.HOST, None) if where == P.HOST else (P.TENSOR, None)


def with_items(keys: set) -> set:
    """(function, parameter) keys, plus the items of each: a parameter every call feeds host
    memory has host items too."""
    return set(keys) | {(function, param + ITEMS) for function, param in keys if not is_items(param)}
