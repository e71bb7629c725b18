# tests/gpu/torch.cmake
