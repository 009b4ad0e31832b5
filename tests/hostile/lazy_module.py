"""A lazy module moved to the GPU before its first call (nn.LazyLinear's UninitializedParameter)."""
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Sequential(torch.nn.LazyLinear(4), torch.nn.ReLU(), torch.nn.LazyLinear(2))
model = model.cuda() if device == "cuda" else model
x = torch.ones(3, 5, device=device)
y = model(x)
with torch.no_grad():
    for p in model.parameters():
        p.fill_(0.25)
y = model(x)
print(tuple(y.shape), [tuple(p.shape) for p in model.parameters()], round(y.sum().item(), 4))
