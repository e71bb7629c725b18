# tests/recorder/nvtx.cmake — the NVTX injection and memrec.h (issue 5).

# NVTX through its own loader: the static-injection hook, then the built
# libmemrec.so named by NVTX_INJECTION64_PATH (its exports, its handlers).
gmt_rec_test(test_rec_nvtx)
add_test(NAME test_rec_nvtx_dlopen
  COMMAND test_rec_nvtx ${PROJECT_SOURCE_DIR} dlopen $<TARGET_FILE:memrec_inject>)
set_tests_properties(test_rec_nvtx_dlopen PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
add_dependencies(test_rec_nvtx memrec_inject)

# memrec.h through its wrappers: the recorder linked in (its symbols exported
# as libmemrec.so exports them), then only the header, with libmemrec.so
# absent or loaded RTLD_LOCAL.
gmt_rec_test(test_rec_api)
set_target_properties(test_rec_api PROPERTIES ENABLE_EXPORTS ON)
add_executable(test_rec_api_dlopen test_rec_api.c)
target_compile_definitions(test_rec_api_dlopen PRIVATE TEST_API_DLOPEN)
target_include_directories(test_rec_api_dlopen PRIVATE ${PROJECT_SOURCE_DIR}/tests
                           ${PROJECT_SOURCE_DIR}/recorder)
target_link_libraries(test_rec_api_dlopen PRIVATE gmt_schema ${CMAKE_DL_LIBS})
add_dependencies(test_rec_api_dlopen memrec_inject)
add_test(NAME test_rec_api_dlopen
  COMMAND test_rec_api_dlopen ${PROJECT_SOURCE_DIR} $<TARGET_FILE:memrec_inject>)
set_tests_properties(test_rec_api_dlopen PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)

# memrec.h's Python snippet, with libmemrec.so preloaded as the launcher does
# and read back by memanalyze. A sanitizer build's libmemrec.so cannot be
# preloaded into an uninstrumented Python.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND AND NOT GMT_SANITIZE)
  add_test(NAME test_rec_api_ctypes
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_rec_api_ctypes.py
            ${PROJECT_SOURCE_DIR} $<TARGET_FILE:memrec_inject> $<TARGET_FILE:memanalyze>)
  set_tests_properties(test_rec_api_ctypes PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
