"""Where a value lives, as far as the linter can tell without running anything.

`UNKNOWN` sits between host and tensor: a value we know nothing about (an attribute of `self`,
an unannotated parameter) is not assumed to be a tensor, but a value that *is* a tensor and
whose device we do not know counts as device (`TENSOR`), as the issue asks. `join` merges paths,
`combine` operands (an operation that mixes a device tensor with host data produces a device
tensor, a host tensor with one of unknown device a host one).
"""

from __future__ import annotations

from enum import IntEnum


class Place(IntEnum):
    """Where a value lives. The order is the *path* order: `join` keeps the later of two, so a
    name that holds a device value on one path is a device value after the paths merge. How an
    operation's operands decide its result is another order (`combine`). Compare places only
    through the functions below, which say which order they mean."""

    PY = 0  # a plain Python value: int, str, a shape, a dtype. Never a tensor.
    HOST = 1  # host memory: a CPU tensor, a numpy array, a list built on the host
    UNKNOWN = 2  # nothing known
    TENSOR = 3  # a torch tensor on an unknown device: treated as device
    DEVICE = 4  # known to live on the device


PY, HOST, UNKNOWN, TENSOR, DEVICE = Place.PY, Place.HOST, Place.UNKNOWN, Place.TENSOR, Place.DEVICE


def join(*wheres: Place) -> Place:
    """Where a value lives that is any of these (two branches of an `if`, the members of a
    `Union`): the most device-like, since a sync on one path is a sync."""
    return max(wheres) if wheres else PY


# How strongly an operand decides where a result lives. torch refuses to mix devices (except
# 0-d host tensors inside device ops), so a known host tensor beats a tensor whose device we do
# not know (`x_cpu & lens` means lens is on the host too), and only a known device tensor beats
# a host one.
_RANK = {PY: 0, UNKNOWN: 1, TENSOR: 2, HOST: 3, DEVICE: 4}


def combine(*wheres: Place) -> Place:
    """Where the result of an operation on these operands lives."""
    return max(wheres, key=_RANK.__getitem__) if wheres else PY


def known_host(where: Place) -> bool:
    """Known not to be on the device: a Python value or host memory."""
    return where <= HOST


def is_tensor_like(where: Place) -> bool:
    """Known to be a tensor that may live on the device (the issue's "tensor-looking value")."""
    return where >= TENSOR


def maybe_device(where: Place) -> bool:
    """Not known to be on the host: what a method that only tensors have (`.item()`) implies."""
    return where >= UNKNOWN


def device_unknown(where: Place) -> bool:
    """Nothing known, or a tensor on a device we cannot tell: what a host-only use of it
    (`async_tensor_h2d(x)`, `x_cpu & x`) can teach us."""
    return where == UNKNOWN or where == TENSOR


FLAG_WORDS = frozenset("is has use uses enable enabled can should do need needs allow supports".split())
# a first word that, with a device word last, names a method, not data: `forward_cuda` is a
# module's CUDA variant of `forward` (a bound method read as an attribute is no tensor), while
# `forward_mode` and `forward_batch` are data and keep what the other words say
METHOD_WORDS = frozenset(("forward",))
# host words that name a Python container (`seq_lens_list`): the list itself is a Python value, but
# its name says nothing of where its items live (a list of CUDA tensors is named so too)
CONTAINER_WORDS = frozenset(("list", "lists"))


class NameHints:
    """Serving code names host mirrors by convention (`seq_lens_cpu`, `num_tokens_np`,
    `block_table.cpu`); the device side sometimes says so too (`input_ids.gpu`). Names are
    split on `_` and a suffix matches as a whole word, so `cpu_` prefixes and `_cpu_` infixes
    count too, while `cpuinfo` does not."""

    host_maps: frozenset[str] = frozenset()  # FileNameHints: carrier mappings (carrier_fields.py)

    def __init__(self, host_suffixes: list[str], device_suffixes: list[str]):
        self.host_words = frozenset(s.strip("_").lower() for s in host_suffixes if s.strip("_"))
        self.device_words = frozenset(s.strip("_").lower() for s in device_suffixes if s.strip("_"))
        self._memo: dict[str, Place] = {}

    def overrides(self, name: str, assigned: Place) -> bool:
        """Whether the name's place wins over the value bound to it: a host word (`x_cpu =
        ...`) is a host mirror whatever the walk makes of its value."""
        return self.where(name) == HOST and assigned != PY

    def container_only(self, name: str) -> bool:
        """Whether the name is host only by a container word (`masks_list`): a Python list,
        not host memory, so not evidence for the items it holds."""
        if self.where(name) != HOST:
            return False
        words = name.lower().strip("_").split("_")
        return all(w in CONTAINER_WORDS for w in words if w in self.host_words)

    def attr_where(self, attr: str) -> Place:
        """Where an attribute of that name lives (`item.grid_thw`), by its name alone."""
        return self.where(attr)

    def where(self, name: str) -> Place:
        found = self._memo.get(name)
        if found is None:
            found = self._memo[name] = self._classify(name)
        return found

    def _classify(self, name: str) -> Place:
        words = name.lower().strip("_").split("_")
        if words[0] in FLAG_WORDS and len(words) > 1:
            return PY  # `is_cuda`, `use_cuda_graph`, `has_cpu_copy`: a flag, not a tensor
        if words[0] in METHOD_WORDS and len(words) > 1 and words[-1] in self.device_words:
            return PY  # `act_fn.forward_cuda`: a bound method, not a tensor (`forward_mode` is data)
        if any(w in self.host_words for w in words):
            return HOST
        # device only as the last word: `input_ids_gpu`, `buffer.gpu`, but not
        # `use_cuda_graph` or `gpu_id`, which are flags and numbers
        if words[-1] in self.device_words:
            return DEVICE
        return UNKNOWN


class FileNameHints(NameHints):
    """A module's own host names on top of the project's conventions: the multimodal fields a
    model declares `keep_on_cpu=True` (`num_patches`, `image_grid_thw`) stay on the host
    wherever the module reads them (classinfo.keep_on_cpu_fields)."""

    def __init__(self, base: NameHints, host_names: frozenset[str], host_attrs: frozenset[str] = frozenset(),
                 host_maps: frozenset[str] = frozenset()):
        self.host_words, self.device_words = base.host_words, base.device_words
        self._memo = {}
        self.host_names = host_names
        self.host_attrs = host_attrs  # attributes only: the extra fields of carrier objects (carrier_fields.py)
        self.host_maps = host_maps  # the mappings carrier classes serve those fields from (`model_specific_data`)

    def attr_where(self, attr: str) -> Place:
        return HOST if attr in self.host_attrs else self.where(attr)

    def _classify(self, name: str) -> Place:
        if name in self.host_names:
            return HOST
        return super()._classify(name)

    def container_only(self, name: str) -> bool:
        return name not in self.host_names and super().container_only(name)

    def overrides(self, name: str, assigned: Place) -> bool:
        # a field's key is no naming convention for locals: `audio_feature_lengths =
        # async_tensor_h2d(audio_input["audio_feature_lengths"], dev)` (vLLM Qwen-Omni) is the
        # device copy of the host field, so a known device value keeps its place
        if name in self.host_names and super()._classify(name) != HOST:
            return assigned not in (PY, DEVICE)
        return super().overrides(name, assigned)
