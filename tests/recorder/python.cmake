# tests/recorder/python.cmake — Python frames in the recorder's stacks
# (issue 6): a python3 child loads the built libmemrec.so, attaches, and
# calls into it through ctypes from known lines; memanalyze reads the trace
# back. A sanitizer build's libmemrec.so cannot load into an uninstrumented
# Python, so the test runs in the normal build only.
#
# Also a script: cmake -P python.cmake checks gmt_pick_pyenv_python on a
# made-up pyenv tree (test_rec_python_pick).

# The newest CPython 3.MINOR with a GIL under pyenv root ROOT, into OUT (""
# when none): versions compare as numbers (3.12.10 is newer than 3.12.9), and
# free-threaded builds (3.13.0t) are left out: libmemrec.so refuses them.
function(gmt_pick_pyenv_python root minor out)
  file(GLOB found "${root}/versions/3.${minor}.*/bin/python3")
  list(FILTER found EXCLUDE REGEX "t/bin/python3$")
  list(SORT found COMPARE NATURAL)
  set(pick "")
  if(found)
    list(GET found -1 pick)
  endif()
  set(${out} "${pick}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE)
  cmake_minimum_required(VERSION 3.20) # the build's policies
  set(root "${CMAKE_CURRENT_BINARY_DIR}/pick_pyenv_test")
  file(REMOVE_RECURSE "${root}")
  foreach(version 3.12.9 3.12.10 3.12.2 3.13.0 3.13.1t 3.13.0t)
    file(WRITE "${root}/versions/${version}/bin/python3" "")
  endforeach()
  set(failed 0)
  foreach(minor_version 12:3.12.10 13:3.13.0 11:none)
    string(REPLACE ":" ";" minor_version "${minor_version}")
    list(GET minor_version 0 minor)
    list(GET minor_version 1 version)
    set(want "${root}/versions/${version}/bin/python3")
    if(version STREQUAL "none")
      set(want "")
    endif()
    gmt_pick_pyenv_python("${root}" ${minor} got)
    if(NOT got STREQUAL want)
      message("FAIL: 3.${minor}: picked '${got}', not '${want}'")
      set(failed 1)
    endif()
  endforeach()
  file(REMOVE_RECURSE "${root}")
  if(failed)
    message(FATAL_ERROR "test_rec_python_pick failed")
  endif()
  message("test_rec_python_pick: ok")
  return()
endif()

add_test(NAME test_rec_python_pick COMMAND ${CMAKE_COMMAND} -P ${CMAKE_CURRENT_LIST_FILE}
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})

find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND AND NOT GMT_SANITIZE)
  set(GMT_PY_MEMREC "")
  if(TARGET memrec)
    set(GMT_PY_MEMREC $<TARGET_FILE:memrec>)
  endif()
  set(GMT_PY_TEST_ARGS ${CMAKE_CURRENT_SOURCE_DIR}/test_rec_python.py
      $<TARGET_FILE:memrec_inject> $<TARGET_FILE:memanalyze> ${GMT_PY_MEMREC})
  add_test(NAME test_rec_python COMMAND ${Python3_EXECUTABLE} ${GMT_PY_TEST_ARGS})
  set_tests_properties(test_rec_python PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180)

  # The same test under every other CPython 3.9-3.13 on the machine (each takes
  # a different path: the profile hook up to 3.11, sys.monitoring from 3.12):
  # pyenv's newest with a GIL, else python3.X on PATH. One that is not there
  # skips, saying so; so does the test itself under a free-threaded build.
  set(GMT_PYENV_ROOT "$ENV{PYENV_ROOT}")
  if(NOT GMT_PYENV_ROOT)
    set(GMT_PYENV_ROOT "$ENV{HOME}/.pyenv")
  endif()
  set(GMT_PY_DEFAULT "${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}")
  foreach(minor 9 10 11 12 13)
    if("3.${minor}" STREQUAL GMT_PY_DEFAULT)
      continue() # test_rec_python runs that one
    endif()
    gmt_pick_pyenv_python("${GMT_PYENV_ROOT}" ${minor} GMT_PY)
    if(NOT GMT_PY)
      find_program(GMT_PY NAMES python3.${minor} NO_CACHE)
    endif()
    if(GMT_PY) # a pyenv shim on PATH runs even where its version is missing: ask it
      execute_process(COMMAND ${GMT_PY} -c "import sys; print('%d.%d' % sys.version_info[:2])"
                      OUTPUT_VARIABLE GMT_PY_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE
                      ERROR_QUIET RESULT_VARIABLE GMT_PY_RC TIMEOUT 20)
      if(NOT GMT_PY_RC EQUAL 0 OR NOT GMT_PY_VERSION STREQUAL "3.${minor}")
        set(GMT_PY "")
      endif()
    endif()
    if(GMT_PY)
      add_test(NAME test_rec_python_py3${minor} COMMAND ${GMT_PY} ${GMT_PY_TEST_ARGS})
    else()
      add_test(NAME test_rec_python_py3${minor}
               COMMAND ${Python3_EXECUTABLE} -c
                       "print('SKIP: no CPython 3.${minor} on this machine'); raise SystemExit(77)")
    endif()
    set_tests_properties(test_rec_python_py3${minor} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180)
  endforeach()
endif()

# The C side in a process without Python (also under the sanitizers).
gmt_rec_test(test_rec_python_c)
