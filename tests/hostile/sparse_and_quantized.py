"""Sparse (COO, CSR) and quantized tensors."""
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
i = torch.tensor([[0, 1, 1], [2, 0, 2]])
v = torch.tensor([3.0, 4.0, 5.0])
s = torch.sparse_coo_tensor(i, v, (2, 3)).to(device)
print(s.is_sparse, s.to_dense().cpu().tolist(), s.coalesce().values().sum().item())
csr = torch.eye(3).to_sparse_csr().to(device)
print(csr.layout, (csr @ torch.ones(3, 1, device=device)).cpu().flatten().tolist())
q = torch.quantize_per_tensor(torch.tensor([0.5, 1.0, 1.5]), scale=0.5, zero_point=0, dtype=torch.quint8)
print(q.is_quantized, q.int_repr().tolist(), q.dequantize().tolist(), q[1].item())
