"""The words both walks read: which attributes, methods, builtins and torch functions give
Python values, host data or device tensors, which decorators mark device code or memoized code,
which type names say where a value lives, and where a device argument points.

Two walks answer "where does this value live": the rules' walk on libcst (evaluate.py,
analyzer.py, devices.py) and the whole-program facts walk on Python's `ast` (facts.py, kept
because it reads every function of every file and must be cheap). Each reads its own tree, but
every word list and every decision that does not depend on the tree lives here, so that a fact
added for one walk holds for the other. Plain strings and places only: no tree types.
"""

from __future__ import annotations

from . import provenance as P

# -- attributes and methods -------------------------------------------------------------------
# Tensor attributes that are plain Python values (no tensor, no sync).
PY_ATTRS = frozenset(
    "shape dtype device ndim is_cuda is_cpu is_sparse layout requires_grad itemsize nbytes is_leaf "
    "is_quantized is_meta names".split()
)
# Attributes that are a view of the same memory: where the tensor lives.
SAME_PLACE_ATTRS = frozenset("T mT H mH data real imag".split())
# Methods whose result is a Python value (numbers, flags, strings, None).
PY_METHODS = frozenset(
    "size dim numel element_size nelement is_contiguous data_ptr stride storage_offset get_device "
    "is_pinned is_floating_point is_complex untyped_storage __len__ item tolist startswith endswith "
    "is_inference is_signed is_shared is_set_to is_same_size is_coalesced is_conj is_neg "
    "join format split strip lower upper keys items values append extend".split()
)
# Of those, the ones a tensor has too, giving pieces of itself (`x.split(sizes)`): Python values
# only for a string receiver (facts.py keeps a tensor receiver's place).
SPLITTING_METHODS = frozenset(("split",))
# Methods whose result is host memory.
HOST_METHODS = frozenset("cpu numpy pin_memory".split())
# What a class's own code says about where it keeps an attribute (classinfo.py reads these):
# methods whose result is on the host (host memory, or numbers read back from the device)...
HOST_RESULT_METHODS = HOST_METHODS | frozenset(("tolist", "item"))
# ...the last word of a function named for what it returns (`async_copy_to_np(...)`)...
HOST_RESULT_WORDS = frozenset(("cpu", "np", "numpy", "host"))
# ...and the annotations of plain Python values (`counts: list[int]`, `n: int`).
PLAIN_VALUE_TYPES = frozenset("list List dict Dict tuple Tuple set Set int float bool str deque".split())
# Methods that make a tensor like their receiver (its device, unless the receiver is no tensor).
NEW_TENSOR_METHODS = frozenset("new_tensor new_zeros new_ones new_empty new_full".split())
# Methods that read a mapping's entry by key: `kwargs.pop("image_grid_thw", None)`.
KEYED_READ_METHODS = frozenset("get pop setdefault".split())


def keyed_place(key, hints) -> P.Place | None:
    """Where the entry of a mapping read by a string key lives (`image_input["image_grid_thw"]`,
    `kwargs.get("tgt_sizes")`): the key names a field, so it lives where a variable of that name
    would, when the name says host (a `_cpu` key, or a multimodal field the module declares
    `keep_on_cpu=True`). Only host: a key never makes a value a device tensor, since serving code
    reuses field names for the device copies it makes (`"input_ids"`)."""
    if isinstance(key, str) and key.isidentifier() and hints.where(key) == P.HOST:
        return P.HOST
    return None


def named_attr_place(key, hints) -> P.Place | None:
    """`getattr(item, "grid_thw", None)`: host when an attribute of that name is (a carrier
    object's host attribute: carrier_fields.py), like `item.grid_thw`."""
    if isinstance(key, str) and key.isidentifier() and hints.attr_where(key) == P.HOST:
        return P.HOST
    return None


def entry_place(owner, key, hints) -> P.Place | None:
    """An entry read by key (`kwargs.pop("grid_thw")`, `mm_kwargs["grid_thw"]`: keyed_place), or
    off the mapping a carrier class serves its undeclared attributes from (carrier_fields.py):
    `item.model_specific_data.get("grid_thw")` is `item.grid_thw`. `owner`: the `ast` or `cst`
    node the entry is read off."""
    keyed = keyed_place(key, hints)
    if keyed is not None or not hints.host_maps:
        return keyed
    field = getattr(owner, "attr", None)
    return named_attr_place(key, hints) if getattr(field, "value", field) in hints.host_maps else None


# -- builtins ---------------------------------------------------------------------------------
# Builtins whose result is a Python value (a container's truth value is its length: no sync).
PY_BUILTINS = frozenset(
    "len range isinstance issubclass hasattr callable id hash str repr format bytes int float bool "
    "complex dict set frozenset tuple list sorted reversed enumerate zip type chr ord bin hex oct "
    "divmod round abs print memoryview bytearray any all iter map filter object".split()
)
# Builtins whose result is one of their arguments (or computed from them): where those live.
COMBINING_BUILTINS = frozenset("min max sum".split())

# -- torch ------------------------------------------------------------------------------------
# torch functions that make a tensor from nothing: their device is where `device=` says, the
# host otherwise; the `_like` family and `as_tensor` keep their argument's device instead.
TORCH_FACTORIES = frozenset(
    "tensor as_tensor zeros ones empty full arange linspace logspace eye rand randn randint "
    "randperm empty_strided frombuffer asarray zeros_like ones_like empty_like full_like rand_like "
    "randn_like randint_like".split()
)
# torch namespaces whose calls return streams, events, devices, flags: never tensors.
TORCH_NON_TENSOR = (
    "torch.cuda.", "torch.accelerator.", "torch.distributed.", "torch.compiler.", "torch._dynamo.",
    "torch.device", "torch.Size", "torch.is_", "torch.get_", "torch.set_", "torch.finfo", "torch.iinfo",
    "torch.numel", "torch.no_grad", "torch.inference_mode", "torch.Generator", "torch.dtype",
    "torch.library.", "torch.ops.", "torch.jit.", "torch.fx.", "torch.nn.Module", "torch.nn.Parameter",
    "torch.profiler.", "torch.autograd.", "torch.cpu.", "torch.backends.", "torch.version",
    "torch.manual_seed", "torch.use_deterministic_algorithms",
)
PREDICATE_PREFIXES = ("is_", "has_", "get_", "supports_", "can_")
# torch functions that wrap host memory.
TORCH_HOST_FUNCTIONS = frozenset(("from_numpy",))
# `processor(images, return_tensors="pt")`, `tokenizer(text, return_tensors="np")`: Hugging Face's
# tokenizers, image and feature processors build the tensors (or arrays) they are asked for on the
# host; only a `.to(device)` of the result (`BatchFeature.to`) moves them
HOST_RESULT_KEYWORD = "return_tensors"
HOST_RESULT_FORMATS = frozenset(("pt", "np"))
# any call told `device="cpu"` (`grammar.allocate_vocab_mask(..., device="cpu")`, a tree helper
# building with `device=device`) puts what it builds on the host, as a torch factory does
HOST_DEVICE_KEYWORD = ("device", "cpu")
# Modules whose functions return host memory, and those whose functions return Python values.
HOST_MODULES = ("numpy.", "np.", "array.", "pandas.")  # pandas frames and series are host data
PY_MODULES = ("math.", "builtins.", "typing.", "dataclasses.", "functools.", "itertools.", "os.", "logging.",
              "time.")
# Functions whose result is one of their arguments (its position), as it is or as arithmetic on
# it that keeps it where it is: `cast(T, x)` is x; Triton's host-side `triton.cdiv(x, n)` is
# `(x + n - 1) // n`, on x's device when x is a tensor (`triton.cdiv(prepare_lens(cu_seqlens),
# chunk).tolist()` syncs only where `cu_seqlens` is on the device).
PASS_THROUGH = {"typing.cast": 1, "typing_extensions.cast": 1, "triton.cdiv": 0}


def pass_through(qualname: str | None) -> int | None:
    """The position of the argument a call of `qualname` gives back (PASS_THROUGH), or None. A
    library module re-exported under a package (`from vllm.triton_utils import triton`:
    `vllm.triton_utils.triton.cdiv`) is the module itself."""
    if not qualname:
        return None
    found = PASS_THROUGH.get(qualname)
    if found is None and qualname.count(".") > 1:
        found = PASS_THROUGH.get(".".join(qualname.rsplit(".", 2)[-2:]))
    return found


# torch dtypes: a value compared with one (`x == torch.float8_e4m3fn`) is a dtype, and the
# comparison a Python bool, whatever the other side's name or annotation suggests.
TORCH_DTYPES = frozenset(
    "float16 half bfloat16 float32 float float64 double complex32 complex64 complex128 cfloat cdouble uint8 "
    "int8 int16 short int32 int int64 long bool uint16 uint32 uint64 float8_e4m3fn float8_e4m3fnuz "
    "float8_e5m2 float8_e5m2fnuz float8_e8m0fnu float4_e2m1fn_x2 qint8 quint8 qint32".split()
)


def compares_dtypes(qualnames) -> bool:
    """Whether one operand of a comparison is a torch dtype (`torch.float8_e4m3fn`): the
    operands' qualified names as resolved through the imports (None for other expressions)."""
    return any(q is not None and q.startswith("torch.") and q[6:] in TORCH_DTYPES for q in qualnames)


# The factories whose first argument is a size (not the `_like` family, which copies a tensor's
# shape and device): a call without `device=` builds on the host.
TORCH_SIZED_FACTORIES = frozenset(name for name in TORCH_FACTORIES if not name.endswith("_like"))


def torch_gives_python(qualname: str) -> bool:
    """A torch function (or class) whose result is no tensor: flags, queries, streams, devices
    and classes (`torch.cuda.is_available`, `torch.get_default_dtype`, `_SymmetricMemory`)."""
    short = qualname.rsplit(".", 1)[-1]
    return qualname.startswith(TORCH_NON_TENSOR) or short.lstrip("_").startswith(PREDICATE_PREFIXES) \
        or short[:1].isupper()


def factory_place(name: str, device: P.Place | None, first: P.Place | None) -> P.Place:
    """Where `torch.<name>(...)` (a TORCH_FACTORIES name) puts its tensor: `device` is where its
    `device=` argument points (None: not given), `first` where its first argument lives (None:
    none)."""
    if device is not None:
        return device
    if name.endswith("_like") and first is not None:
        return first
    if name == "as_tensor" and first is not None:
        return first if first != P.PY else P.HOST
    return P.HOST


# -- decorators -------------------------------------------------------------------------------
# Triton/JIT/CuTe/Helion kernels (`@triton.jit`, `@triton.autotune(...)`, `@cute.kernel`,
# `@tilelang_jit`, `@register_kernel(...)`, `@cached_triton_kernel(...)`): device code, never
# walked. Told by the decorator's last name, not by a word anywhere in it: `@kernel_launcher`
# (vLLM) and `@debug_kernel_api` (SGLang) wrap host launchers, `@torch.jit.script` and
# `@torch.jit.ignore` are host code, `@triton_op` registers a host function that launches one,
# and `@JitWarmupRegistry.capture` decorates vLLM's `GPUModelRunner.__init__`.
KERNEL_DECORATORS = frozenset(("jit", "njit", "autotune", "heuristics", "kernel"))
KERNEL_DECORATOR_SUFFIXES = ("_jit", "_kernel")
# Memoized functions and cached properties: their body runs once per key.
MEMO_DECORATOR_WORDS = ("cache",)


def decorator_kind(name: str) -> str | None:
    """"kernel", "memo" or None for a decorator's dotted name."""
    name = name.lower()
    last = name.rsplit(".", 1)[-1]
    if last in KERNEL_DECORATORS or last.endswith(KERNEL_DECORATOR_SUFFIXES):
        return "kernel"
    if any(word in name for word in MEMO_DECORATOR_WORDS):
        return "memo"
    return None


# -- type annotations -------------------------------------------------------------------------
TENSOR_TYPES = frozenset(("Tensor", "Parameter"))
HOST_TYPES = frozenset(("ndarray", "NDArray", "array"))
PY_TYPES = frozenset(
    "int float bool str bytes list List tuple Tuple dict Dict set Set frozenset Sequence Iterable "
    "Mapping Callable None Optional Union Literal Iterator Generator type".split()
)
# Types that say nothing of where a value lives: `x: Any` may hold a device tensor. (Read as a
# Python value until 2026-11-27, which lost 14 real SGLang syncs and added 5 false findings:
# docs/lint.md, "Issue 29's refactor, checked whole".)
OPAQUE_TYPES = frozenset(("Any", "object"))
# Return annotations of Python scalars: a function annotated to return one gives no tensor.
SCALAR_TYPES = frozenset("int float bool complex str".split())
CONTAINERS = frozenset(
    "list List tuple Tuple Sequence MutableSequence Iterable Iterator dict Dict Mapping "
    "MutableMapping set Set frozenset FrozenSet deque Generator Callable type".split()
)
UNION_HEADS = frozenset(("Optional", "Union", "Annotated"))


def type_place(last: str) -> P.Place | None:
    """Where a value of the type named `last` (the last part of its dotted name) lives; None
    when the name says nothing (a class of the program)."""
    if last in TENSOR_TYPES:
        return P.TENSOR
    if last in HOST_TYPES:
        return P.HOST
    if last in PY_TYPES or last in CONTAINERS:
        return P.PY
    return None


def generic_place(head: str) -> P.Place | None:
    """Where a value of a subscripted type `head[...]` lives (not a union): containers are
    Python values, arrays host memory."""
    if head in CONTAINERS:
        return P.PY
    if head in HOST_TYPES:
        return P.HOST
    return None


def annotation_place(node, shape) -> tuple[P.Place | None, str]:
    """Where a value of an annotated type lives, and its class name when it is a class:
    `torch.Tensor | None` -> TENSOR; `list[torch.Tensor]` -> PY (a list's truth value is its
    length, no sync); `np.ndarray` -> HOST; `CommonAttentionMetadata` -> (None, that name).
    `shape(node)` reads one node of either tree (evaluate.py for libcst, facts.py for `ast`):
    ("name", dotted name), ("generic", head's dotted name, member nodes), ("union", member
    nodes), or ("", None) for anything else; a string annotation is read as the expression in it."""
    kind, name, *members = shape(node)
    if kind == "name":
        last = name.rsplit(".", 1)[-1]
        if last in OPAQUE_TYPES:
            return None, ""
        where = type_place(last)
        return (where, "") if where is not None else (None, last)
    if kind == "generic":
        head = name.rsplit(".", 1)[-1]
        if head in UNION_HEADS:
            inner = members[0][:1] if head == "Annotated" else members[0]
            return union_place([annotation_place(m, shape) for m in inner])
        where = generic_place(head)
        return (where, "") if where is not None else (None, head)
    if kind == "union":
        return union_place([annotation_place(m, shape) for m in members[0]])
    return None, ""


# Containers whose iteration yields their members (a dict's yields its keys: not here).
SEQUENCES = frozenset(
    "list List tuple Tuple Sequence MutableSequence Iterable Iterator set Set frozenset FrozenSet deque".split()
)


def element_place(node, shape) -> P.Place | None:
    """Where the items of a value of an annotated type live when it is iterated: TENSOR for a
    sequence of tensors (`list[torch.Tensor]`, `tuple[Tensor, ...]`, `Optional[Sequence[Tensor]]`,
    or a union with one), None when the type says nothing. The container itself is a Python
    value (its truth value is its length), but its items are not Python numbers."""
    kind, name, *members = shape(node)
    if kind == "generic":
        head = name.rsplit(".", 1)[-1]
        if head in UNION_HEADS:
            inner = members[0][:1] if head == "Annotated" else members[0]
            return P.TENSOR if any(element_place(m, shape) == P.TENSOR for m in inner) else None
        if head in SEQUENCES and members[0] and annotation_place(members[0][0], shape)[0] == P.TENSOR:
            return P.TENSOR
        return None
    if kind == "union":
        return P.TENSOR if any(element_place(m, shape) == P.TENSOR for m in members[0]) else None
    return None


def union_place(members: list[tuple[P.Place | None, str]]) -> tuple[P.Place | None, str]:
    """`X | None`, `Optional[X]`: None adds nothing; the most device-like member wins; a class
    member names the type when nothing else is known."""
    wheres = [w for w, _ in members if w is not None]
    names = [n for _, n in members if n]
    known = [w for w in wheres if w != P.PY] or wheres
    if names and not any(w != P.PY for w in wheres):
        return None, names[0]
    return (P.join(*known) if known else None), (names[0] if names else "")


# -- devices ----------------------------------------------------------------------------------
DEVICE_PREFIXES = ("cuda", "xpu", "npu", "hip", "mps", "meta")


def literal_device_place(text: str) -> P.Place | None:
    """Where a device string points (`"cpu"`, `"cuda:0"`); None for anything else."""
    text = text.lower()
    if text.startswith("cpu"):
        return P.HOST
    if text.startswith(DEVICE_PREFIXES):
        return P.DEVICE
    return None


def named_device_place(name: str, host_words: frozenset[str]) -> P.Place | None:
    """Where a device held in a variable points, by its name (`self.device`, `cpu_device`,
    `target_dev`); None for a name that is no device (`dtype`, `x`)."""
    last = name.rsplit(".", 1)[-1].lower()
    words = last.strip("_").split("_")
    if "dtype" in words or "type" in words:
        return None
    if any(w in host_words for w in words) or last == "cpu":
        return P.HOST
    if "device" in words or "dev" in words or last in ("cuda", "gpu"):
        return P.DEVICE
    return None


def called_device_place(name: str | None, host_words: frozenset[str]) -> P.Place | None:
    """Where the device a call returns points, by the called function's name (`get_device()`,
    `torch.cuda.current_device()`, `get_cpu_device()`); None for a call that names no device
    (`x.to(torch_dtype())`, `get_dtype()`)."""
    return named_device_place(name, host_words) if name else None


# torch functions that join a Python sequence of tensors into one tensor on their device
# (`torch.nn.utils.rnn.pad_sequence` joins its sequences padded, on their one device too)
JOINING_FUNCTIONS = frozenset("cat concat concatenate stack hstack vstack pad_sequence".split())
# Other torch functions whose first argument is a sequence of tensors, not one tensor.
SEQUENCE_INPUTS = frozenset("dstack column_stack row_stack broadcast_tensors meshgrid block_diag cartesian_prod".split())

