# tests/gpu/cuda.cmake: each samples/cuda scenario run under memrec, its trace
# checked event by event against what the sample printed (addresses, sizes,
# NVTX steps). Skips (77) where no GPU is usable; the sample says why.
if(TARGET cuda_sample AND TARGET memrec AND TARGET memanalyze AND Python3_FOUND)
  foreach(scenario malloc async managed pinned vmm fail nvtx)
    add_test(NAME gpu_cuda_${scenario}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_cuda_samples.py
              $<TARGET_FILE:memrec> $<TARGET_FILE:memanalyze> $<TARGET_FILE:cuda_sample>
              ${scenario})
    set_tests_properties(gpu_cuda_${scenario} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
  endforeach()
endif()
