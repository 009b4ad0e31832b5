"""What a function gives back, read off its `return`s, for the call facts (facts.py) and the
fields they type (issue 24, "host data taken for device data"). MiniCPM-V's image path:

    def flatten_nested_list(nested_list):          # utils: a list of its argument's items
        if isinstance(nested_list, list):
            return [item for sublist in nested_list for item in flatten_nested_list(sublist)]
        return [nested_list]

    class Base(nn.Module):
        def __init__(self, config):
            self.resampler = self.init_resampler(config)     # typed by the method's return
        def get_image_feature(self, items):
            sizes = torch.stack(flatten_nested_list([item.tgt_size for item in items]))
            return self.resampler(x, sizes)                  # host sizes

    class V2(Base):
        def init_resampler(self, config):
            resampler = Resampler(config)
            return resampler.to(device=get_device())

Three facts about code, each small:
- a list built by a comprehension that reads host data off each item (`[item.tgt_size for item
  in items]`, a carrier object's host attribute) holds host tensors: it is host data for the
  parameter it is passed for, as `torch.cat` of it already was (carrier_fields.joined_items);
- a function whose every `return` gives its parameter's items (`[p]`, or a comprehension whose
  last loop variable is the element and whose loops walk `p`, an earlier loop's variable, or
  the function's own result on one) returns data where the argument is: the call facts read
  `flatten_nested_list(x)` as "follows parameter 0", so the caller's argument decides;
- a field filled by calling a method of the object (`self.resampler = self.init_resampler(...)`)
  holds what that method returns, resolved in the class of the object the field is read off
  (the override of a subclass: `V2.init_resampler`); a method that builds one class and returns
  it (`return Resampler(...)`, or a local bound to one, also through `.to(...)`, which returns
  the module) returns that class, where its annotation says nothing more (`-> nn.Module`).
"""

from __future__ import annotations

import ast

from .ast_annotations import dotted, factory_class
from .platform_picks import note_class_path
from .fact_values import CALLED, HOST_FACT, PY_FACT, UNKNOWN_FACT
from . import provenance as P

# an nn.Module's methods that return the module itself
_SELF_RETURNING = frozenset({"to", "cuda", "eval", "train", "float", "half", "bfloat16", "requires_grad_"})


def host_items_list(node: ast.expr, evaluate):
    """The call facts' place of a list literal or comprehension: host data when a list
    comprehension reads host data off each item, else a Python value."""
    if isinstance(node, ast.ListComp) and isinstance(node.elt, ast.Attribute) and evaluate(node.elt)[0] == P.HOST:
        return HOST_FACT
    return PY_FACT


def joined_tensors(joined):
    """`torch.stack(x)` of what `x` gives: tensors, not a list; of a call's result, its items
    (`torch.stack(flatten_nested_list(...))` is where the returned list's items are: a list
    of Python values gives tensors of unknown place, wholeprogram._item)."""
    if joined[1] is None and isinstance(joined[2], int):
        return (joined[0], None, (joined[2], -1))
    return UNKNOWN_FACT if joined[0] == P.PY else joined


def returned_items(scope, value: ast.expr, fact):
    """The fact of a `return value`: "follows parameter p" when the value is a list of `p`'s
    items (module docstring), else `fact` as the walk found it. A comprehension over the
    function's own results holds items only while every `return` does (note_return checks)."""
    params = scope.facts["params"] + scope.facts["kwonly"]
    kind = _items_kind(scope, value, params)
    scope.item_return = kind
    if kind is None or (kind == "own" and getattr(scope, "other_return", False)):
        return fact
    if isinstance(value, ast.Name):
        return fact  # `return p`: the parameter's own fact
    source = value.elts[0] if isinstance(value, ast.List) else value.generators[0].iter
    return (P.UNKNOWN, source.id, None)


def _items_kind(scope, value: ast.expr, params: list) -> str | None:
    """"items" when `value` is `p`, `[p]` or a comprehension over `p`'s items; "own" when such
    a comprehension also walks the function's own result on an item; None otherwise."""
    if isinstance(value, ast.Name):
        return "items" if value.id in params else None
    if isinstance(value, ast.List):
        return "items" if len(value.elts) == 1 and isinstance(value.elts[0], ast.Name) and value.elts[0].id in params \
            else None
    if not isinstance(value, ast.ListComp) or not isinstance(value.elt, ast.Name) or not value.generators:
        return None
    own = scope.qualname.rsplit(".", 1)[-1]
    first = value.generators[0].iter
    if not (isinstance(first, ast.Name) and first.id in params):
        return None
    bound: set[str] = set()
    kind = "items"
    for generator in value.generators:
        source = generator.iter
        if isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.func.id == own \
                and len(source.args) == 1 and not source.keywords:
            source, kind = source.args[0], "own"  # the function's own result on an item: its items
        if generator.ifs or generator.is_async or not isinstance(generator.target, ast.Name) or \
                not (isinstance(source, ast.Name) and (source.id == first.id or source.id in bound)):
            return None
        bound.add(generator.target.id)
    return kind if value.elt.id == value.generators[-1].target.id else None


def note_return(scope, value: ast.expr) -> None:
    """After a `return value` is recorded: a platform's pick (platform_picks.py), and the class
    the function builds and returns (module docstring), kept while every `return` gives it."""
    facts = scope.facts
    note_class_path(facts, value)
    kind = getattr(scope, "item_return", None)
    scope.item_return = None
    if kind is None and not getattr(scope, "other_return", False):  # the own results may be anything now
        scope.other_return = True
        facts["returns"][:] = [PY_FACT if index in scope.__dict__.get("own_returns", ()) else f
                               for index, f in enumerate(facts["returns"])]
    elif kind == "own" and not getattr(scope, "other_return", False) and facts["returns"]:
        scope.__dict__.setdefault("own_returns", set()).add(len(facts["returns"]) - 1)
    if not scope.classes:
        return  # a method's only: a field a method fills (Program.method_filled)
    made = _made_class(scope, value)
    if "made_class" in facts:
        if facts["made_class"] != made:
            facts["made_class"] = None
    elif made is not None and len(facts["returns"]) == 1 and made != facts["returns_class"]:
        facts["made_class"] = made


def _made_class(scope, value: ast.expr) -> str | None:
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _SELF_RETURNING:
        value = value.func.value  # `resampler.to(device=..., dtype=...)`: the module itself
    if isinstance(value, ast.Name):
        return scope.types.get(value.id)
    if isinstance(value, ast.Call):  # `return Resampler(...)`
        made = factory_class(scope.file.resolve_name(dotted(value.func) or "", scope.local_defs))
        return made if made and made.rsplit(".", 1)[-1][:1].isupper() else None
    return None


def method_field(scope, attr: str, value: ast.Call) -> bool:
    """`self.resampler = self.init_resampler(...)`: record the field as filled by that method's
    return (`"init_resampler()"`, Program.field_class resolves it); False for any other call."""
    func = value.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
        return False
    scope.file.classes.setdefault(scope.file.qualify(".".join(scope.classes)),
                                  {"bases": [], "props": {}, "fields": {}, "line": 0})["fields"] \
        .setdefault(attr, func.attr + CALLED)
    return True
