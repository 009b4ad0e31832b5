"""The program's own tensor subclasses and non-strided layouts on the simulated device
(runtime/sim/subclasses.py): each program runs once on plain CPU tensors and once on simulated
CUDA tensors, and must give the same results (types, values, calls seen by the subclass)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import syncscope  # noqa: E402
from syncscope.runtime.sim import SimulatedDeviceError  # noqa: E402
from tests.sim_grad_modes import grad_mode  # noqa: E402,F401

pytestmark = pytest.mark.usefixtures("grad_mode")


def _on_both(program):
    plain = program("cpu")
    with syncscope.trap(device="sim") as trap:
        simulated = program("cuda")
    return plain, simulated, trap.events


class Plain(torch.Tensor):
    """torch's default __torch_function__: results come back as the subclass."""


class Logged(torch.Tensor):
    seen: list = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.seen.append(getattr(func, "__name__", str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


def test_a_default_subclass_keeps_its_class_on_the_device():
    def program(device):
        a = torch.arange(4.0).as_subclass(Plain)
        b = a.to(device) * 2
        c = torch.ones(4, device=device).as_subclass(Plain)
        c.add_(1)
        d = (b + c).cpu()
        row = c[1:]
        return [type(x).__name__ for x in (a, b, c, d, row)], isinstance(b, Plain), d.tolist(), b.device.type

    plain, simulated, _ = _on_both(program)
    assert simulated[:3] == plain[:3] and simulated[3] == "cuda"
    assert simulated[0] == ["Plain"] * 5


def test_a_logging_subclass_sees_the_calls_it_sees_on_the_cpu():
    def program(device):
        Logged.seen = []
        x = torch.arange(6.0).as_subclass(Logged)
        y = x.to(device) * 2
        total = y[y > 3].sum().item()
        w = torch.zeros(6, device=device).as_subclass(Logged)
        w.copy_(x)
        return type(y).__name__, total, w.cpu().tolist(), list(Logged.seen)

    plain, simulated, events = _on_both(program)
    assert simulated == plain
    assert plain[3] == ["to", "mul", "gt", "__getitem__", "sum", "item", "copy_", "cpu", "tolist"]
    assert {e.kind for e in events} >= {"h2d_copy", "bool_mask_index", "item", "cpu_copy"}


def test_as_subclass_of_a_device_tensor_shares_its_memory():
    with syncscope.trap(device="sim"):
        base = torch.zeros(3, device="cuda")
        view = base.as_subclass(Plain)
        view[1:] = 5.0  # changes in the output mirror changes in self (torch's as_subclass docs)
        base.add_(1)
        assert isinstance(view, Plain) and view.device.type == "cuda"
        assert view.cpu().tolist() == [1.0, 6.0, 6.0] == base.cpu().tolist()
        assert repr(view).startswith("Plain(") and "device='cuda:0'" in repr(view)


class Wrapper(torch.Tensor):
    """DTensor-style: an outer tensor without storage, dispatching to an inner one."""

    @staticmethod
    def __new__(cls, inner):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype, device=inner.device)

    def __init__(self, inner):
        self.inner = inner

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        from torch.utils._pytree import tree_map

        unwrap = lambda t: t.inner if isinstance(t, Wrapper) else t  # noqa: E731
        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
        return tree_map(lambda t: Wrapper(t) if isinstance(t, torch.Tensor) else t, out)


@pytest.mark.parametrize("move", ["to", "to_dtype", "cuda"])
def test_a_wrapper_subclass_moves_its_inner_tensor(move):
    def program(device):
        w = Wrapper(torch.arange(3.0))
        if move == "to":
            moved = w.to(device)
        elif move == "to_dtype":
            moved = w.to(device, torch.float64)
        else:
            moved = w.cuda() if device == "cuda" else w
        out = moved * 2
        return type(moved).__name__, moved.device.type, type(moved.inner).__name__, moved.inner.dtype, out.inner.cpu().tolist()

    plain, simulated, events = _on_both(program)
    assert simulated[0] == "Wrapper" and simulated[1] == "cuda"
    assert simulated[2] == "SimulatedCudaTensor"  # the inner tensor moved, not wrapped
    assert simulated[3:] == plain[3:]
    assert [e.kind for e in events][:1] == ["h2d_copy"]  # the move is a host->device copy, as on a GPU


@pytest.mark.filterwarnings("ignore:Sparse")  # torch's "beta" / invariant-check notes
@pytest.mark.parametrize("layout", ["csr", "csc", "bsr", "coo"])
def test_sparse_layouts_move_and_compute_as_on_the_cpu(layout):
    def program(device):
        dense = torch.tensor([[1.0, 0.0, 2.0, 0.0], [0.0, 3.0, 0.0, 0.0], [4.0, 0.0, 0.0, 5.0], [0.0, 0.0, 6.0, 0.0]])
        make = {"csr": dense.to_sparse_csr, "csc": dense.to_sparse_csc, "coo": dense.to_sparse, "bsr": lambda: dense.to_sparse_bsr((2, 2))}
        s = make[layout]().to(device)
        out = [str(s.layout), s.device.type, (s.to_dense() * 2).cpu().tolist()]
        if layout in ("csr", "coo"):
            out.append((s @ torch.ones(4, 1, device=device)).cpu().flatten().tolist())
        if layout != "coo":
            with pytest.raises(RuntimeError, match="do not have strides"):
                s.stride()  # as on the CPU (and on a GPU): no strides for compressed layouts
        return out

    plain, simulated, _ = _on_both(program)
    assert simulated[0] == plain[0] and simulated[1] == "cuda"
    assert simulated[2:] == plain[2:]


@pytest.mark.filterwarnings("ignore:Sparse")
def test_a_sparse_device_tensor_prints_as_on_a_gpu():
    with syncscope.trap(device="sim"):
        text = repr(torch.eye(2).to_sparse_csr().cuda())
    assert "values=tensor([1., 1.]), device='cuda:0', size=(2, 2), nnz=2, layout=torch.sparse_csr)" in text
    assert text.count("device=") == 1


def test_a_subclass_with_its_own_metaclass_and_slots_works():
    class Meta(type(torch.Tensor)):
        pass

    class Odd(torch.Tensor, metaclass=Meta):
        __slots__ = ("extra",)

    with syncscope.trap(device="sim"):
        out = torch.ones(2, device="cuda").as_subclass(Odd)
        assert isinstance(out, Odd) and type(type(out)) is Meta
        assert (out * 3).cpu().tolist() == [3.0, 3.0] and type(out * 3).__name__ == "Odd"


def test_a_subclass_that_cannot_have_a_device_variant_is_named_with_a_way_out():
    class Registry(type(torch.Tensor)):
        """A metaclass that refuses a second class of the same name (registries do this)."""

        names: set = set()

        def __new__(mcs, name, bases, namespace):
            if name in mcs.names:
                raise TypeError(f"{name} is registered already")
            mcs.names.add(name)
            return super().__new__(mcs, name, bases, namespace)

    class Registered(torch.Tensor, metaclass=Registry):
        pass

    assert type(torch.ones(2).as_subclass(Registered)).__name__ == "Registered"  # plain python
    with syncscope.trap(device="sim"):
        with pytest.raises(SimulatedDeviceError, match=r"class .*Registered .*registered already.*--device cuda"):
            torch.ones(2, device="cuda").as_subclass(Registered)


def test_a_subclass_works_in_a_thread_that_has_no_mode():
    # a thread running before the trap gets no torch-function mode: the device tensor's own
    # handler (the variant's __torch_function__ after the subclass's) does the work
    import threading

    shared: dict = {}
    go = threading.Event()

    def use(v):
        doubled = v * 2
        return type(doubled).__name__, doubled.device.type, doubled.cpu().tolist(), list(Logged.seen)

    def worker():
        go.wait(10)
        shared["out"] = use(shared["v"])

    Logged.seen = []
    plain = use(torch.ones(2).as_subclass(Logged))

    thread = threading.Thread(target=worker)
    thread.start()
    with syncscope.trap(device="sim") as trap:
        Logged.seen = []
        shared["v"] = torch.ones(2, device="cuda").as_subclass(Logged)
        go.set()
        thread.join(10)
    assert shared["out"] == ("Logged", "cuda", *plain[2:])
    assert [e.kind for e in trap.events] == ["cpu_copy"]
