# tests/recorder/real_driver.cmake — the real-driver tier (issue 26): NVIDIA's R535 driver and
# CUPTI 11.8/12.4 from Debian's non-free section, fetched into the build folder by
# real_driver/fetch.sh (never installed; the tests skip, saying why, where they cannot be
# had): memrec and libmemrec.so run on the real driver without a GPU (test_real_driver), and
# the recorder compiles against Debian's CUDA 11.8 and 12.4 headers (test_real_driver_build).
# The programs and the probe library are built without sanitizers: they run on, or are
# loaded by, the uninstrumented driver (the sanitizer build's libmemrec.so is uninstrumented
# too, so the tier runs in both builds).
if(NOT TARGET memrec)
  return()
endif()
find_package(Python3 COMPONENTS Interpreter)
set(GMT_REAL_DRIVER_DIR ${CMAKE_CURRENT_BINARY_DIR}/real_driver)

add_executable(real_cuda_prog real_driver/real_cuda_prog.c)
target_compile_options(real_cuda_prog PRIVATE -fno-sanitize=all)
target_link_options(real_cuda_prog PRIVATE -fno-sanitize=all)
target_link_libraries(real_cuda_prog PRIVATE ${CMAKE_DL_LIBS})

foreach(variant probe_injection probe_injection_nodelete)
  add_library(${variant} SHARED real_driver/probe_injection.c)
  set_target_properties(${variant} PROPERTIES PREFIX "" OUTPUT_NAME ${variant}
                        LIBRARY_OUTPUT_DIRECTORY ${GMT_REAL_DRIVER_DIR})
  target_compile_options(${variant} PRIVATE -fno-sanitize=all)
  target_link_options(${variant} PRIVATE -fno-sanitize=all)
  target_link_libraries(${variant} PRIVATE ${CMAKE_DL_LIBS})
endforeach()
target_link_options(probe_injection_nodelete PRIVATE -Wl,-z,nodelete) # as libmemrec.so

get_target_property(GMT_RD_TOOLKIT_CUPTI CUDA::cupti IMPORTED_LOCATION)
if(Python3_FOUND)
  add_test(NAME test_real_driver
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/real_driver/test_real_driver.sh ${GMT_REAL_DRIVER_DIR}
            $<TARGET_FILE:memrec> $<TARGET_FILE:real_cuda_prog> $<TARGET_FILE:probe_injection>
            $<TARGET_FILE:probe_injection_nodelete> $<TARGET_FILE:fake_cuda_prog>
            ${Python3_EXECUTABLE} ${GMT_RD_TOOLKIT_CUPTI} ${CUDAToolkit_VERSION_MAJOR})
  set_tests_properties(test_real_driver PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
  add_test(NAME test_real_driver_build
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/real_driver/test_real_driver_build.sh
            ${GMT_REAL_DRIVER_DIR} ${CMAKE_C_COMPILER} ${PROJECT_SOURCE_DIR}
            "$<JOIN:$<TARGET_PROPERTY:gmt_recorder,SOURCES>,:>:$<JOIN:$<TARGET_PROPERTY:memrec_inject,SOURCES>,:>"
            "$<TARGET_PROPERTY:PkgConfig::UNWIND,INTERFACE_INCLUDE_DIRECTORIES>"
    COMMAND_EXPAND_LISTS)
  set_tests_properties(test_real_driver_build PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
