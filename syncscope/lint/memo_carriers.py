"""A memo dict that a per-call context object carries for a long-lived owner: fills once per key.

    class MultiviewAttentionContext(msgspec.Struct):        # built again on every forward
        layout: MultiviewLayout
        mask_cache: MutableMapping = msgspec.field(default_factory=dict)

    class Cosmos3MultiviewDiT(nn.Module):
        def __init__(self, ...):
            self._mask_cache = {}                          # the module's own dict, made once
        def forward(self, ...):
            context = MultiviewAttentionContext(layout, self._mask_cache)   # every build hands it

    def get_plan(context: MultiviewAttentionContext, *, und_len: int, ...):
        cached = context.mask_cache.get(key)
        if cached is not None:                             # every later call with this key
            return cached
        plan = build_block_sparsity(...)                   # a blocking copy, once per key
        context.mask_cache[key] = plan
        return plan

(SGLang 0.5.23's Cosmos3 multiview attention.) memo.py makes a dict memo on `self` (`plan =
self.plans.get(key); if plan is None: ...; self.plans[key] = plan`, any key but an identity)
cold where the object lives across steps; memo_params.py does the same for a field of a
parameter declared an `nn.Module`. Here the parameter is a context object built per call, so
its own lifetime says nothing; what the memo fills is the dict in its field, and that dict is
the same object every call when every construction of the class hands the field a long-lived
object's own field. The facts, about code:
* Per function (`carried_memo`, per file): a top-level `v = p.f.get(k)` then `if v is not None:`
  ending in a `return` (no `else`), the rest of the body storing `p.f[...] = ...`; `p` a
  parameter annotated with a plain class name (resolved through the module's imports).
* Over the tree (`carried_lines`, asked by memo.py): the class is a class of the tree with no
  in-tree base (its positional fields are its own annotated class-body names, in order); each
  construction of its short name in the linted files' text (`Name(`, `mod.Name(`) passes the
  field, by position or keyword, as `self.x`, inside a class that memo.py says lives across
  steps, whose methods store `self.x` only in `__init__`; there is at least one; and no text
  hands the class on as a value (`= Name`, `(Name,`, `Name)` as an argument: a factory that may
  build it with a fresh dict) or builds it another way (`Name.make(...)`, `cls(...)` or
  `type(self)(...)` in the class). A construction with `*args` / `**kwargs`, or one leaving the
  field to its default (a fresh dict per object), keeps the fill per step.
Not decided (the fill stays): a dict re-made outside `__init__` (a fresh dict per call), a field
the caller fills with its own parameter, a class with an in-tree base. Not looked at: a subclass
of the owner, in a file that does not name the class, re-making the dict in another method.
"""

from __future__ import annotations

import ast

from .ast_annotations import dotted
from .lines import last_line
from .nodewalk import every_node

CARRIED = "<carried>"  # method slot prefix: CARRIED + "class|field" (memo_lines asks carried_lines)
_CONSTRUCTORS = frozenset(("__init__", "__post_init__"))


def _is_none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _class_params(function, aliases: dict, module: str) -> dict:
    """{parameter: the dotted class name its annotation names}, for plain-name annotations."""
    found = {}
    args = function.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if arg.arg in ("self", "cls") or arg.annotation is None:
            continue
        name = dotted(arg.annotation)
        if not name or not name.rpartition(".")[2][:1].isupper():
            continue
        head, _, rest = name.partition(".")
        if head in aliases:
            found[arg.arg] = aliases[head] + (f".{rest}" if rest else "")
        elif not rest:
            found[arg.arg] = f"{module}.{name}" if module else name
    return found


def _holder(node, params: dict) -> tuple | None:
    """`p.f` of a class parameter: (p, f)."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in params:
        return node.value.id, node.attr
    return None


def _stores_entry(body, param: str, field: str) -> bool:
    """The statements store an entry of `param.field` (`p.f[k] = v`)."""
    for node in every_node(ast.Module(body=list(body), type_ignores=[])):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and _holder(target.value, {param: 1}) == (param, field):
                    return True
    return False


def carried_memo(function, aliases: dict, module: str) -> tuple | None:
    """(start, end, "p.f", CARRIED + "class|f"): the rest of `function`'s body after a top-level
    `v = p.f.get(k)` / `if v is not None: ... return` when that rest stores `p.f[...]`; else None."""
    params = _class_params(function, aliases, module)
    if not params:
        return None
    body = function.body
    for index, stmt in enumerate(body[:-2]):
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute)
                and stmt.value.func.attr == "get"):
            continue
        held = _holder(stmt.value.func.value, params)
        test = body[index + 1]
        if held is None or not isinstance(test, ast.If) or test.orelse or not isinstance(test.body[-1], ast.Return):
            continue
        cond = test.test
        if not (isinstance(cond, ast.Compare) and len(cond.ops) == 1 and isinstance(cond.ops[0], ast.IsNot)
                and isinstance(cond.left, ast.Name) and cond.left.id == stmt.targets[0].id
                and _is_none(cond.comparators[0])):
            continue
        rest = body[index + 2:]
        param, field = held
        if _stores_entry(rest, param, field):
            return (rest[0].lineno, last_line(rest[-1]), f"{param}.{field}", f"{CARRIED}{params[param]}|{field}")
    return None


def _builds(short: str):
    """A text's answer: (constructions, handed on); a construction is (enclosing class or "",
    positional argument kinds, {keyword: kind}, starred); a kind is the attribute of `self.x`
    or "". Also {class: {attr: methods that store self.attr}} of the file's classes."""
    def answer(text: str):
        if short not in text:
            return ((), False, {})
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return None
        made: list = []
        handed = [False]
        stores: dict = {}

        def kind(node) -> str:
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                return node.attr
            return ""

        def visit(node, cls: str, method: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    visit(child, f"{cls}.{child.name}" if cls else child.name, "")
                    continue
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit(child, cls, child.name if not method else method)
                    continue
                if isinstance(child, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and cls:
                    targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                    for target in targets:
                        for sub in every_node(target):
                            if kind(sub):
                                stores.setdefault(cls, {}).setdefault(sub.attr, set()).add(method)
                if isinstance(child, ast.Call):
                    name = dotted(child.func) or ""
                    if name.rpartition(".")[2] == short:
                        starred = any(isinstance(a, ast.Starred) for a in child.args) or \
                            any(k.arg is None for k in child.keywords)
                        made.append((cls, tuple(kind(a) for a in child.args),
                                     {k.arg: kind(k.value) for k in child.keywords if k.arg}, starred))
                    head = dotted(child.func.value) if isinstance(child.func, ast.Attribute) else None
                    if (head or "").rpartition(".")[2] == short or (
                            cls.rpartition(".")[2] == short and (name == "cls" or isinstance(child.func, ast.Call))):
                        handed[0] = True  # `Name.make(...)`, `cls(...)`, `type(self)(...)`: built elsewhere
                    for value in [*child.args, *(k.value for k in child.keywords)]:
                        if isinstance(value, ast.Name) and value.id == short and name.rpartition(".")[2] != "isinstance":
                            handed[0] = True
                if isinstance(child, ast.Assign) and isinstance(child.value, ast.Name) and child.value.id == short:
                    handed[0] = True
                visit(child, cls, method)

        visit(tree, "", "")
        return (tuple(made), handed[0], {c: {a: tuple(sorted(m)) for a, m in s.items()} for c, s in stores.items()})
    return answer


def _fields_in_order(text: str, name: str, line: int) -> tuple | None:
    """The annotated class-body names of the class `name` defined at `line`, in order."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in every_node(tree):
        if isinstance(node, ast.ClassDef) and node.name == name and node.lineno == line:
            return tuple(stmt.target.id for stmt in node.body
                         if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                         and "ClassVar" not in (ast.unparse(stmt.annotation)))
    return None


def carried_lines(program, results: dict, texts, serves, cls_name: str, field: str) -> str | None:
    """Why the dict in `cls_name`'s `field` lives across steps (the owner class that hands it),
    or None when some construction may hand a fresh one (see above)."""
    if texts is None:
        return None
    cls = program.chase(cls_name, True)
    info = program.classes.get(cls) if cls else None
    if info is None or any(program.chase(base, True) for base in info.get("bases") or () if base):
        return None
    module = cls.rpartition(".")[0]
    paths = {getattr(result, "module", None): path for path, result in results.items()}
    path = paths.get(module)
    short = cls.rpartition(".")[2]
    text = texts.text(path) if path else None
    fields = _fields_in_order(text, short, info.get("line", 0)) if text else None
    if not fields or field not in fields:
        return None
    position = fields.index(field)
    answers = texts.answers("carried-memo-builds", short, sorted(results), _builds(short))
    if answers is None:
        return None
    owners = set()
    for where, answer in answers.items():
        if answer is None:
            return None
        made, handed, stores = answer
        if handed:
            return None
        mod = getattr(results.get(where), "module", "") or ""
        for owner, args, keywords, starred in made:
            given = keywords.get(field, args[position] if position < len(args) else "")
            if starred or not owner or not given:
                return None
            if set((stores.get(owner) or {}).get(given, ())) - _CONSTRUCTORS:
                return None  # the owner re-makes the field: a fresh dict per call
            qual = f"{mod}.{owner}" if mod else owner
            if qual not in program.classes or serves(qual) is None:
                return None
            owners.add(qual.rpartition(".")[2])
    if not owners:
        return None
    return ", ".join(sorted(owners))

