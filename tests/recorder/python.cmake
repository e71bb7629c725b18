# tests/recorder/python.cmake — Python frames in the recorder's stacks
# (issue 6): a python3 child loads the built libmemrec.so, attaches, and
# calls into it through ctypes from known lines; memanalyze reads the trace
# back. A sanitizer build's libmemrec.so cannot load into an uninstrumented
# Python, so the test runs in the normal build only.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND AND NOT GMT_SANITIZE)
  set(GMT_PY_MEMREC "")
  if(TARGET memrec)
    set(GMT_PY_MEMREC $<TARGET_FILE:memrec>)
  endif()
  add_test(NAME test_rec_python
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_rec_python.py
            $<TARGET_FILE:memrec_inject> $<TARGET_FILE:memanalyze> ${GMT_PY_MEMREC})
  set_tests_properties(test_rec_python PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180)
endif()

# The C side in a process without Python (also under the sanitizers).
gmt_rec_test(test_rec_python_c)
