"""torch._inductor.codecache of the fake torch: PyCodeCache.stack_frames_for_code, which
PyTorch's snapshot calls for every Python frame once torch._inductor.codecache is there
(torch/csrc/profiler/python/combined_traceback.cpp, appendSymbolized): the extra frames of
inductor-generated code; none here."""


class PyCodeCache:
    @staticmethod
    def stack_frames_for_code(filename, line):
        return None
