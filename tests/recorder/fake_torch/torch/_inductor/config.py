"""torch._inductor.config of the fake torch: it imports torch._dynamo.config, so importing
torch._inductor first imports the whole torch._dynamo package before torch._inductor.utils
(as PyTorch's own import of torch._inductor gets through), while a torch._dynamo already
being imported by another thread has its config already: no wait here."""
import torch._dynamo.config  # noqa: F401
