"""A tensor subclass whose __torch_function__ logs every call made on it."""
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
seen = []


class Logged(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        seen.append(getattr(func, "__name__", str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


x = torch.arange(6.0).as_subclass(Logged)
y = x.to(device) * 2
z = y[y > 3]
total = z.sum().item()
w = torch.zeros(6, device=device).as_subclass(Logged)
w.copy_(x)
print(type(y).__name__, round(total, 3), w.cpu().tolist())
print(len(seen), sorted(set(seen)))
