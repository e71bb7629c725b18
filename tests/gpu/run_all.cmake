# tests/gpu/run_all.cmake — run_all.sh, everything that needs a GPU in one go (figures,
# fixtures, verdicts under build/tests/gpu/run_all). Skips (77) with the reason where there is
# no GPU; gpu_run_all_skip checks that clean skip itself, on every machine.
if(TARGET memrec AND TARGET memanalyze)
  add_test(NAME gpu_run_all
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/run_all.sh ${PROJECT_BINARY_DIR}
            ${CMAKE_CURRENT_BINARY_DIR}/run_all)
  set_tests_properties(gpu_run_all PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1800)
  add_test(NAME gpu_run_all_skip
    COMMAND bash -c "out=$(bash \"$0\" --pretend-no-gpu \"$1\" \"$2\"); rc=$?; echo \"$out\"; [ $rc -eq 77 ] && [ \"\${out#SKIP: }\" != \"$out\" ] && [ ! -e \"$2\" ]"
            ${CMAKE_CURRENT_SOURCE_DIR}/run_all.sh ${PROJECT_BINARY_DIR}
            ${CMAKE_CURRENT_BINARY_DIR}/run_all_skip)
endif()
