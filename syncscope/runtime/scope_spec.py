"""The one parser of `--scope MODULE:ATTRS`, shared by `syncscope run` (runtime/regions.py,
class_scopes.py, scope_check.py) and `syncscope oracle` (oracle/scopes.py).

MODULE is a dotted module name, `__main__`, or a path to the program's own `.py` file; ATTRS is
`function` or `Class.method`. The split is at the last colon: a path may hold one (`C:/...`), an
attribute path never does.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScopeSpec:
    module: str
    attrs: tuple[str, ...]
    text: str

    @classmethod
    def parse(cls, text: str) -> "ScopeSpec":
        """ValueError with the usage line when `text` is not MODULE:function or MODULE:Class.method."""
        module, sep, attr_path = text.rpartition(":")
        attrs = tuple(attr_path.split(".")) if attr_path else ()
        if not sep or not module or not attrs or not all(a.isidentifier() for a in attrs):
            raise ValueError(f"--scope expects package.module:function or package.module:Class.method, got {text!r}")
        return cls(module, attrs, text)

    @property
    def attr_path(self) -> str:
        """`Class.method` or `function`: also the name of the region a scoped call runs in."""
        return ".".join(self.attrs)
