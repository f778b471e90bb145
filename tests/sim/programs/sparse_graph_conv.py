"""A graph convolution over a sparse adjacency matrix, as Kipf's pygcn and pytorch/examples' gcn
write it: the normalised adjacency is a COO tensor, moved to the GPU with the features."""
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)
n, f = 12, 5
edges = torch.randint(0, n, (2, 30))
adj = torch.sparse_coo_tensor(edges, torch.ones(30), (n, n)).coalesce()
adj = adj + torch.eye(n).to_sparse()
degree = torch.sparse.sum(adj, dim=1).to_dense()
adj = torch.sparse_coo_tensor(adj.indices(), adj.values() / degree[adj.indices()[0]], (n, n))
features = torch.randn(n, f).to(device)
adj = adj.to(device)  # bug: adj = adj
weight = nn.Parameter(torch.randn(f, 3, device=device) * 0.1)
opt = torch.optim.Adam([weight], lr=0.01)
for _ in range(3):
    opt.zero_grad()
    hidden = torch.sparse.mm(adj, features @ weight)
    loss = hidden.relu().sum()
    loss.backward()
    opt.step()
csr = adj.to_sparse_csr()
csr_out = csr @ features
nnz = adj._nnz()
