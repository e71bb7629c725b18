"""torch.nn.Embedding of the fake torch: weight (num_embeddings, embedding_dim)."""
from ... import _tensor
from ..parameter import Parameter
from .module import Module


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = Parameter(_tensor.empty((num_embeddings, embedding_dim), device=device,
                                              dtype=dtype))
