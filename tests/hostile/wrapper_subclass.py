"""A DTensor-style wrapper subclass: an outer tensor with no storage that dispatches to an inner one."""
import torch
from torch.utils._pytree import tree_map

device = "cuda" if torch.cuda.is_available() else "cpu"


class Wrapper(torch.Tensor):
    @staticmethod
    def __new__(cls, inner):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype, device=inner.device)

    def __init__(self, inner):
        self.inner = inner

    def __repr__(self):
        return f"Wrapper({self.inner!r})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        unwrap = lambda t: t.inner if isinstance(t, Wrapper) else t
        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
        return tree_map(lambda t: Wrapper(t) if isinstance(t, torch.Tensor) else t, out)


w = Wrapper(torch.arange(4.0, device=device))
y = (w + 1) * 2
print(type(y).__name__, y.inner.cpu().tolist(), y.sum().item())
moved = Wrapper(torch.arange(3.0)).to(device)
print(type(moved).__name__, moved.inner.cpu().tolist())
