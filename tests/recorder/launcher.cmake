# tests/recorder/launcher.cmake — the memrec launcher and offline
# symbolization (issue 5).

# The symbolizer, on this very test program: built with -g whatever the
# build type, since its answers are its own source lines.
if(TARGET gmt_symbolize)
  add_executable(test_symbolize test_symbolize.c)
  target_link_libraries(test_symbolize PRIVATE gmt_symbolize)
  target_include_directories(test_symbolize PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_compile_options(test_symbolize PRIVATE -g)
  add_test(NAME test_symbolize COMMAND test_symbolize)
  set_tests_properties(test_symbolize PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()

# The launcher, end to end: exit statuses, signals, output passed through
# byte for byte, options, the environment it sets, and a trace written by a
# program's memrec.h calls (no GPU needed), symbolized and read back.
if(TARGET memrec)
  add_executable(passthrough_prog passthrough_prog.c)
  target_include_directories(passthrough_prog PRIVATE ${PROJECT_SOURCE_DIR}/recorder)
  target_compile_options(passthrough_prog PRIVATE -g)
  target_link_libraries(passthrough_prog PRIVATE ${CMAKE_DL_LIBS})
  add_test(NAME test_memrec_cli
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_memrec_cli.sh $<TARGET_FILE:memrec>
            $<TARGET_FILE:passthrough_prog> $<TARGET_FILE:memanalyze>)
  set_tests_properties(test_memrec_cli PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
  # Where a trace may be written: never through a symbolic link, never outside the -o folder
  # whatever the rank or host name hold, an existing file replaced by rename (issue 28).
  add_test(NAME test_memrec_output
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_memrec_output.sh $<TARGET_FILE:memrec>
            $<TARGET_FILE:passthrough_prog> $<TARGET_FILE:memanalyze>)
  set_tests_properties(test_memrec_output PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
