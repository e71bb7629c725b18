# tests/recorder/torch.cmake — PyTorch's allocator history, live (issue 6).

# rec_torch.c's entry points, read back from the trace exactly.
gmt_rec_test(test_rec_torch)

# The startup hook end to end, with a fake torch (fake_torch/): memrec runs
# Python scripts and memanalyze reads back blocks, stacks, steps, segments.
# A sanitizer build's libmemrec.so cannot be preloaded into an
# uninstrumented Python.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND AND NOT GMT_SANITIZE AND TARGET memrec)
  add_test(NAME test_rec_torch_py
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_rec_torch.py
            $<TARGET_FILE:memrec> $<TARGET_FILE:memanalyze>)
  set_tests_properties(test_rec_torch_py PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()

# Every entry exactly once, on real histories: each real snapshot in ../shared/data/pytorch
# played back through the fake torch's ring in windows (wrapping or not), its trace held
# event by event to the snapshot's own, and the two reports to each other (issue 26).
if(Python3_FOUND AND NOT GMT_SANITIZE AND TARGET memrec)
  add_test(NAME test_rec_torch_snapshots
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_rec_torch_snapshots.py
            $<TARGET_FILE:memrec> $<TARGET_FILE:memanalyze>
            ${PROJECT_SOURCE_DIR}/../shared/data/pytorch)
  set_tests_properties(test_rec_torch_snapshots PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
