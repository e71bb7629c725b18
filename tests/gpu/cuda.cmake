# tests/gpu/cuda.cmake
