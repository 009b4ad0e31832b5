"""Fields a class's copy method has already copied to the host (issue 24, "host data taken for
device data").

SGLang's default (overlap) scheduler copies a step's results to pinned host memory as soon as
the forward is queued, and reads them one step later:

    class GenerationBatchResult:
        def copy_to_cpu(self, return_logprob):
            self.next_token_ids = _async_d2h(self.next_token_ids)
            self.logits_output.next_token_logprobs = _async_d2h(self.logits_output.next_token_logprobs)
            self.logits_output.sampling_mask_output.map_device_tensors(_async_d2h)
            self.copy_done.record()

    def process_batch_result_decode(self, batch, result: GenerationBatchResult):
        if result.copy_done is not None:
            result.copy_done.synchronize()
        next_token_ids = result.next_token_ids.tolist()    # host data: no sync

The facts, each about code:
- A host copy is `x.cpu()`, `x.to("cpu", ...)`, or a call of a function of one parameter each of
  whose returns is such a copy of it, a local bound only to a buffer made on the host
  (`torch.empty(..., pin_memory=True)`, `device="cpu"`), or the parameter itself inside
  `if <param>.device.type == "cpu":` / `if <param>.is_cpu:` (every function of that name in
  the tree must be so).
- A copy method is a method that records an event field of its object (`self.E.record()`) and
  replaces fields of its object by host copies of themselves (`self.a.f = H(self.a.f)`, a list
  of `H(v)` over `self.a.f`), or hands a host-copy function to a mapper (`holder.m(H)`), a method
  `m(self, fn)` that replaces fields by `fn` of themselves (`self.f = fn(self.f)`).
- Code that waits on that event (`<x>.E.synchronize()`) waits for the copy method's copies: the
  event is recorded there, after them. So in a module holding such a wait, those fields (by
  name, on any object, as carrier_fields.py's attributes) are host data.

Scope: this follows the default configuration of a tree where the copy method is called only on
some paths (SGLang's `--disable-overlap-schedule` leaves `copy_done` None and the fields on the
device: those reads are real syncs there). Names are matched by their short names, as the other
class facts are. Per file (`copy_facts`, `ast` only, stored with the carrier facts under
"copies"); per run (`copied_host_attrs`), the modules' host attributes, walked again by the
engine as carrier attributes are.
"""

from __future__ import annotations

import ast
from .nodewalk import every_node

_HOST_BUFFERS = frozenset({"empty", "zeros", "ones", "full", "empty_like", "zeros_like", "empty_strided"})


def copy_facts(tree: ast.Module, text: str, module: str = "") -> dict | None:
    """What this file tells about copy methods; None when nothing (most files)."""
    aliases = _aliases(tree, module)
    recorded = ".record()" in text
    found: dict = {"hosts": set(), "mappers": {}, "copies": {}, "maps": {}, "waits": set()}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _host_copy(stmt):
                found["hosts"].add(f"{module}.{stmt.name}")
        elif isinstance(stmt, ast.ClassDef):
            for item in stmt.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    _method(item, aliases, found, recorded, text)
    if ".synchronize()" in text:
        for node in every_node(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "synchronize" and not node.args \
                    and isinstance(node.func.value, ast.Attribute) \
                    and not (isinstance(node.func.value.value, ast.Name) and node.func.value.value.id == "torch"):
                found["waits"].add(node.func.value.attr)  # `<x>.E.synchronize()`, not `torch.cuda.synchronize()`
    if not any(found.values()):
        return None
    return {"hosts": frozenset(found["hosts"]),
            "mappers": {m: frozenset(f) for m, f in found["mappers"].items()},
            "copies": {e: frozenset(f) for e, f in found["copies"].items()},
            "maps": {e: frozenset(f) for e, f in found["maps"].items()},
            "waits": frozenset(found["waits"])}


def copied_host_attrs(facts: dict[str, dict]) -> dict[str, frozenset[str]]:
    """Module -> the fields (each as ".name") that a copy method whose event the module waits on
    has replaced by host copies."""
    files = [f["copies"] for f in facts.values() if f and f.get("copies")]
    if not files or not any(f["waits"] for f in files):
        return {}
    hosts: set[str] = set()
    mappers: dict[str, set] = {}
    for file in files:
        hosts |= file["hosts"]
        for method, fields in file["mappers"].items():
            mappers.setdefault(method, set()).update(fields)

    def host(copier: str) -> bool:
        return copier == ".cpu" or copier in hosts

    events: dict[str, set] = {}
    for file in files:
        for event, pairs in file["copies"].items():
            events.setdefault(event, set()).update(f for f, copier in pairs if host(copier))
        for event, pairs in file["maps"].items():
            for method, copier in pairs:
                if host(copier):
                    events.setdefault(event, set()).update(mappers.get(method, ()))
    out: dict[str, frozenset] = {}
    for module, file in facts.items():
        waits = file.get("copies", {}).get("waits", ()) if file else ()
        attrs = {"." + f for e in waits for f in events.get(e, ()) if not f.startswith("_")}
        if attrs:
            out[module] = frozenset(attrs)
    return out


def with_copy_facts(tree: ast.Module, text: str, module: str) -> dict | None:
    """The carrier facts (carrier_fields.py) with this file's copy facts under "copies"."""
    from .carrier_fields import carrier_facts

    carrier = carrier_facts(tree, text)
    copies = copy_facts(tree, text, module)
    if copies is None:
        return carrier
    return {**(carrier or {}), "copies": copies}


def _aliases(tree: ast.Module, module: str) -> dict[str, str]:
    """Local name -> the qualified name of the function it names: imported (`from m import
    async_d2h as _async_d2h`: "m.async_d2h") or defined in the module."""
    out = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[stmt.name] = f"{module}.{stmt.name}"
        elif isinstance(stmt, ast.ImportFrom):
            base = stmt.module or ""
            if stmt.level:
                parent = module.split(".")[:-stmt.level] if module else []
                base = ".".join(parent + ([base] if base else []))
            for alias in stmt.names:
                out[alias.asname or alias.name] = f"{base}.{alias.name}"
    return out


def _method(method, aliases: dict, found: dict, recorded: bool, text: str) -> None:
    params = [a.arg for a in method.args.posonlyargs + method.args.args]
    if len(params) == 2 and params[0] == "self" and not method.args.vararg and f"{params[1]}(self." in text:
        mapped = _mapped_fields(method, params[1])
        if mapped:
            found["mappers"].setdefault(method.name, set()).update(mapped)
    if not recorded:
        return
    events = {n.func.value.attr for n in every_node(method)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "record"
              and not n.args and isinstance(n.func.value, ast.Attribute)
              and isinstance(n.func.value.value, ast.Name) and n.func.value.value.id == "self"}
    if not events:
        return
    copies, maps = set(), set()
    for node in every_node(method):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _self_chain(node.targets[0]):
            copier = _copier_of(node.value, node.targets[0], aliases)
            if copier is not None:
                copies.add((node.targets[0].attr, copier))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and len(node.args) == 1 \
                and not node.keywords and isinstance(node.args[0], ast.Name):
            maps.add((node.func.attr, aliases.get(node.args[0].id, node.args[0].id)))
    for event in events:
        found["copies"].setdefault(event, set()).update(copies)
        found["maps"].setdefault(event, set()).update(maps)


def _self_chain(node) -> bool:
    """`self.f` or `self.a.f` (attributes only)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id == "self"


def _same(a, b) -> bool:
    return ast.dump(a, annotate_fields=False).replace("Store", "Load") == \
        ast.dump(b, annotate_fields=False).replace("Store", "Load")


def _copier_of(value, target, aliases: dict) -> str | None:
    """The host copy `value` makes of the field `target` ("." + "cpu" for a method copy, a
    function's imported name), or None."""
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and _same(func.value, target) and _cpu_copy(value):
            return ".cpu"
        if isinstance(func, ast.Name) and len(value.args) == 1 and not value.keywords and _same(value.args[0], target):
            return aliases.get(func.id, func.id)
        return None
    if isinstance(value, ast.ListComp) and len(value.generators) == 1:
        gen = value.generators[0]
        if not isinstance(gen.target, ast.Name) or gen.ifs or not _same(gen.iter, target):
            return None
        elt = value.elt
        if isinstance(elt, ast.IfExp) and isinstance(elt.orelse, ast.Name) and elt.orelse.id == gen.target.id:
            elt = elt.body  # `H(v) if torch.is_tensor(v) else v`: a non-tensor item stays what it was
        if isinstance(elt, ast.Call) and isinstance(elt.func, ast.Name) and len(elt.args) == 1 \
                and not elt.keywords and isinstance(elt.args[0], ast.Name) and elt.args[0].id == gen.target.id:
            return aliases.get(elt.func.id, elt.func.id)
    return None


def _cpu_copy(call: ast.Call) -> bool:
    """`x.cpu()` or `x.to("cpu", ...)` / `x.to(device="cpu")`."""
    func = call.func
    if func.attr == "cpu" and not call.args:
        return True
    if func.attr != "to":
        return False
    target = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "device"), None)
    return isinstance(target, ast.Constant) and target.value == "cpu"


def _mapped_fields(method, fn: str) -> set[str]:
    """The fields `m(self, fn)` replaces by `fn` of themselves; empty when it uses `fn` in any
    other way."""
    fields, copies = set(), 0
    for node in every_node(method):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) \
                and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "self" \
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) \
                and node.value.func.id == fn and len(node.value.args) == 1 and not node.value.keywords \
                and _same(node.value.args[0], node.targets[0]):
            fields.add(node.targets[0].attr)
            copies += 1
    if not copies:
        return set()
    uses = sum(1 for n in every_node(method) if isinstance(n, ast.Name) and n.id == fn and isinstance(n.ctx, ast.Load))
    return fields if uses == copies else set()


def _host_copy(function) -> bool:
    """Whether every return of a one-parameter function is a host copy of its parameter."""
    args = function.args
    params = [a.arg for a in args.posonlyargs + args.args]
    if len(params) != 1 or args.vararg or args.kwarg or args.kwonlyargs:
        return False
    param = params[0]
    buffers = _host_buffers(function)
    returns = []
    _returns(function.body, param, False, returns)
    if not returns:
        return False
    for value, on_host in returns:
        if isinstance(value, ast.Name) and value.id == param and on_host:
            continue
        if isinstance(value, ast.Name) and value.id in buffers:
            continue
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                and isinstance(value.func.value, ast.Name) and value.func.value.id == param and _cpu_copy(value):
            continue
        return False
    return True


def _returns(body: list, param: str, on_host: bool, out: list) -> None:
    for stmt in body:
        if isinstance(stmt, ast.Return):
            out.append((stmt.value, on_host))
        elif isinstance(stmt, ast.If):
            _returns(stmt.body, param, on_host or _tests_host(stmt.test, param), out)
            _returns(stmt.orelse, param, on_host, out)
        elif isinstance(stmt, (ast.For, ast.While, ast.With, ast.Try)):
            for part in ("body", "orelse", "finalbody"):
                _returns(getattr(stmt, part, []) or [], param, on_host, out)
            for handler in getattr(stmt, "handlers", []):
                _returns(handler.body, param, on_host, out)


def _tests_host(test, param: str) -> bool:
    """`p.device.type == "cpu"` or `p.is_cpu`."""
    if isinstance(test, ast.Attribute) and test.attr == "is_cpu":
        return isinstance(test.value, ast.Name) and test.value.id == param
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        left, right = test.left, test.comparators[0]
        return isinstance(right, ast.Constant) and right.value == "cpu" and isinstance(left, ast.Attribute) \
            and left.attr == "type" and isinstance(left.value, ast.Attribute) and left.value.attr == "device" \
            and isinstance(left.value.value, ast.Name) and left.value.value.id == param
    return False


def _host_buffers(function) -> set[str]:
    """Locals bound only to `torch.empty(..., pin_memory=True)` / `device="cpu"` buffers."""
    bound: dict[str, bool] = {}
    for node in every_node(function):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.With)):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [getattr(node, "target", None)] if not isinstance(node, ast.With) else \
                [i.optional_vars for i in node.items]
            for target in targets:
                for name in every_node(target) if target is not None else ():
                    if isinstance(name, ast.Name):
                        ok = isinstance(node, ast.Assign) and target is name and _host_buffer(node.value)
                        bound[name.id] = bound.get(name.id, True) and ok
    return {n for n, ok in bound.items() if ok}


def _host_buffer(value) -> bool:
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr in _HOST_BUFFERS and isinstance(value.func.value, ast.Name)
            and value.func.value.id == "torch"):
        return False
    for k in value.keywords:
        if k.arg == "pin_memory" and isinstance(k.value, ast.Constant) and k.value.value is True:
            return True
        if k.arg == "device" and isinstance(k.value, ast.Constant) and k.value.value == "cpu":
            return True
    return False
