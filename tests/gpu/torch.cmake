# tests/gpu/torch.cmake — samples/pytorch/train.py recorded by memrec and
# checked with memanalyze (issue 6). Needs PyTorch and a GPU; each test
# skips (77) without them and says which is missing.
if(TARGET memrec AND TARGET memanalyze AND Python3_FOUND)
  foreach(scenario leak fragment)
    add_test(NAME gpu_torch_${scenario}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/test_torch_train.py
              $<TARGET_FILE:memrec> $<TARGET_FILE:memanalyze> ${PROJECT_SOURCE_DIR} ${scenario})
    set_tests_properties(gpu_torch_${scenario} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
  endforeach()
endif()
