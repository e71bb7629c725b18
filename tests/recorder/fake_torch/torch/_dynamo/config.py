"""torch._dynamo.config of the fake torch: imported first by torch._dynamo, and by
torch._inductor's config (as PyTorch's inductor config reads dynamo's)."""
