"""Meta tensors and FakeTensorMode: shapes without data."""
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

device = "cuda" if torch.cuda.is_available() else "cpu"
m = torch.empty(4, 8, device="meta")
n = (m @ m.T).to("meta")
print(tuple(n.shape), n.device.type, n.is_meta)
lin = torch.nn.Linear(8, 3, device="meta")
print(tuple(lin(m).shape))
lin = lin.to_empty(device=device)
print(tuple(lin.weight.shape))
with FakeTensorMode():
    f = torch.empty(5, 6, device=device)
    g = (f * 2).sum(0)
    h = f.to(device)
    print(tuple(g.shape), tuple(h.shape))
