# tests/recorder/fake_cuda.cmake — a CUDA world without a GPU (issue 12): a fake
# libcuda.so.1 (a 12.4 and a 13.0 driver) that loads the injection library in
# cuInit and runs CUPTI's callback around cuMemAlloc/cuMemFree, stand-in CUPTI
# libraries (libcupti.so.12 without cuptiSubscribe_v2, libcupti.so.13 with it, a
# minimal one, one that refuses to subscribe, one that is no CUPTI, one that is
# no library), and a program that uses them. With them: which CUPTI the recorder
# chooses and why (test_rec_cupti_lib), and memrec end to end on them
# (test_memrec_cupti.sh: the CUPTI line, the fallbacks, one warning when none
# suits, no preload, no libunwind in the program's C++ exceptions).
# Built without sanitizers: they are loaded into uninstrumented programs.
set(GMT_FAKE_CUDA ${CMAKE_CURRENT_BINARY_DIR}/fake_cuda)

function(gmt_fake_cuda_lib target source folder file)
  add_library(${target} SHARED fake_cuda/${source})
  set_target_properties(${target} PROPERTIES PREFIX "" OUTPUT_NAME ${file} SUFFIX ""
                        LIBRARY_OUTPUT_DIRECTORY ${GMT_FAKE_CUDA}/${folder})
  target_include_directories(${target} PRIVATE ${CUDAToolkit_INCLUDE_DIRS}
                             ${CUDAToolkit_CUPTI_INCLUDE_DIR})
  target_compile_options(${target} PRIVATE -fno-sanitize=all)
  target_link_options(${target} PRIVATE -fno-sanitize=all)
  target_link_libraries(${target} PRIVATE ${CMAKE_DL_LIBS})
  target_compile_definitions(${target} PRIVATE ${ARGN})
endfunction()

gmt_fake_cuda_lib(fake_cuda12 fake_libcuda.c driver12 libcuda.so.1 FAKE_DRIVER_VERSION=12040)
gmt_fake_cuda_lib(fake_cuda13 fake_libcuda.c driver13 libcuda.so.1 FAKE_DRIVER_VERSION=13000)
gmt_fake_cuda_lib(standin_cupti12 standin_cupti.c cupti libcupti.so.12 STANDIN_API_VERSION=24)
gmt_fake_cuda_lib(standin_cupti13 standin_cupti.c cupti libcupti.so.13
                  STANDIN_API_VERSION=130001 STANDIN_V2=1)
gmt_fake_cuda_lib(standin_cupti_min standin_cupti.c cupti-min libcupti.so.12 STANDIN_MINIMAL=1)
gmt_fake_cuda_lib(standin_cupti_broken standin_cupti.c cupti-broken libcupti.so.13
                  STANDIN_API_VERSION=130001 STANDIN_V2=1 STANDIN_RESULT=CUPTI_ERROR_UNKNOWN)
gmt_fake_cuda_lib(standin_cupti_none standin_cupti.c cupti-none libcupti.so.12
                  STANDIN_API_VERSION=24 STANDIN_NO_SUBSCRIBE=1)
file(WRITE ${GMT_FAKE_CUDA}/cupti-garbage/libcupti.so.12 "not a shared library\n")
# An older CUPTI that does not know the newest cbids, and one that refuses a cbid it knows.
gmt_fake_cuda_lib(standin_cupti_older standin_cupti.c cupti-older libcupti.so.13
                  STANDIN_API_VERSION=130001 STANDIN_V2=1
                  STANDIN_MAX_CBID=CUPTI_DRIVER_TRACE_CBID_cuMemPoolImportPointer)
gmt_fake_cuda_lib(standin_cupti_refuses standin_cupti.c cupti-refuses libcupti.so.13
                  STANDIN_API_VERSION=130001 STANDIN_V2=1
                  STANDIN_REFUSE_CBID=CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged)
set(GMT_FAKE_CUDA_LIBS fake_cuda12 fake_cuda13 standin_cupti12 standin_cupti13 standin_cupti_min
    standin_cupti_broken standin_cupti_none standin_cupti_older standin_cupti_refuses)

add_executable(fake_cuda_prog fake_cuda/fake_cuda_prog.c)
target_include_directories(fake_cuda_prog PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
target_compile_options(fake_cuda_prog PRIVATE -fno-sanitize=all)
target_link_options(fake_cuda_prog PRIVATE -fno-sanitize=all)
target_link_libraries(fake_cuda_prog PRIVATE fake_cuda13 ${CMAKE_DL_LIBS})
set_target_properties(fake_cuda_prog PROPERTIES SKIP_BUILD_RPATH ON) # the driver: LD_LIBRARY_PATH
add_dependencies(fake_cuda_prog ${GMT_FAKE_CUDA_LIBS})

# Which CUPTI, in what order, and why not (rec_cupti_lib.c), in forked children.
add_executable(test_rec_cupti_lib test_rec_cupti_lib.c)
target_link_libraries(test_rec_cupti_lib PRIVATE gmt_recorder)
target_include_directories(test_rec_cupti_lib PRIVATE ${PROJECT_SOURCE_DIR}/tests)
add_dependencies(test_rec_cupti_lib ${GMT_FAKE_CUDA_LIBS})
add_test(NAME test_rec_cupti_lib COMMAND test_rec_cupti_lib ${GMT_FAKE_CUDA})
set_tests_properties(test_rec_cupti_lib PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)

if(TARGET memrec)
  add_test(NAME test_memrec_cupti
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/test_memrec_cupti.sh $<TARGET_FILE:memrec>
            $<TARGET_FILE:fake_cuda_prog> ${GMT_FAKE_CUDA} $<TARGET_FILE:memanalyze>)
  set_tests_properties(test_memrec_cupti PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180)
endif()
