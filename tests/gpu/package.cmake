# tests/gpu/package.cmake — gpu_package: tests/gpu/package.sh's folder for the GPU machine
# (binaries, the libraries a GPU image may lack, the scripts) checked here, without a GPU:
# size, every library resolved inside it, its tools run with the system's copies hidden,
# run_all.sh's clean skip from it. Skips (77) without patchelf, or in a sanitizer build.
if(TARGET memrec AND TARGET memanalyze)
  add_test(NAME gpu_package
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_package.sh ${PROJECT_BINARY_DIR}
            ${CMAKE_CURRENT_BINARY_DIR}/package_check ${GMT_SANITIZE})
  set_tests_properties(gpu_package PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
