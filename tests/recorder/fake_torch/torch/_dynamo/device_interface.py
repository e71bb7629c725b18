"""torch._dynamo.device_interface of the fake torch: what torch._inductor.utils imports of
torch._dynamo (get_interface_for_device, as PyTorch's utils.py does at its top)."""


def get_interface_for_device(device):
    return None
