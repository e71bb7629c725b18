// throw_catch.cpp — the C++ library fake_cuda_prog's `throw` step dlopens
// (built with g++ by test_memrec_cupti.sh and bench/run_unwind_overhead.sh):
// one throw caught inside the library per call, the shape of pybind11 turning
// a Python error into a C++ exception and back.
#include <stdexcept>

extern "C" int gmt_throw_catch(int i) {
    try {
        if (i >= 0)
            throw std::runtime_error("thrown");
    } catch (const std::exception &) {
        return 1;
    }
    return 0;
}
