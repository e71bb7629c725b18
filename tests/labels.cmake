# tests/labels.cmake — the one list of which tier each test belongs to, as ctest labels:
#   fast  `make check` (ctest -L fast): under a minute on 2 cores, run while a change is written
#   slow  the rest of `make test` (which runs every tier): the longest tests, the fuzzers
#   gpu   needs a GPU: skips (77) without one, runs on the GPU machine (ctest -L gpu)
# A test named below gets that label; every other test is fast, so a new test needs no line here
# unless it is slow (over ~1.5 s in the gcc build: ctest's Testing/Temporary/CTestCostData.txt has
# the times of the last runs) or needs a GPU.
#
# Two uses:
#   include(labels.cmake)   in every CMakeLists.txt that adds tests (tests/, tests/recorder/,
#                           tests/gpu/): labels that directory's tests, at its end. CMake
#                           3.25's set_tests_properties reaches only the tests of the directory it
#                           is called from (its DIRECTORY option is 3.28's), hence one line per
#                           directory rather than one for all. In tests/ it also adds test_labels.
#   cmake -DCTEST=ctest -DBUILD=DIR -P labels.cmake
#                           test_labels: every test of the build in DIR has exactly one of the
#                           three labels (a test in a directory without the include has none).

set(GMT_TIER_LABELS fast slow gpu)

set(GMT_SLOW_TESTS
  fuzz_trace_reader fuzz_pickle        # 30 s each (the sanitizer build)
  test_rec_core                        # 16 threads x 1 M events, SIGKILL, fork
  test_memrec_cli                      # real programs under memrec, end to end
  test_alloc_failures                  # one failing strdup at each call in turn
  test_cli_segments_diff
  test_real_driver test_real_driver_build
  test_snapshot_replay                 # the real snapshots in ../shared
  test_rec_torch_snapshots test_rec_torch_py
  test_btree_write
  test_cli_categories
  test_codec_damage
  test_sorted_pairs
  test_cli_report test_cli_ranks test_event_store_cli
  test_text_json                       # every command, text against JSON
  test_cache_kill test_cache_concurrent # issue 28: kills at each point, queries at once
  test_cli_labels test_cli_pictures    # issue 29: snapshots made by make_pickles.py, ~5 s each
  test_cli_export                      # issue 30: synth and the real snapshots, ~2 s
  test_export_pytorch                  # issue 30: export, re-import, compare; ~40-55 s
  test_export_perfetto                 # issue 30: protoc decodes, known answers, categories; ~10-20 s
  test_view_server test_view_browser  # issue 31: the server ~5 s; the page in Chromium ~10 s
  test_view_window                     # issue 31: window and search vs the CLI, 4 inputs; ~30 s
  test_view_inputs test_view_inputs_browser # issue 31: several inputs: ~2 s; the strip ~5 s
  test_view_stacks                     # issue 31: /api/stacks brute-forced, ~15 s
  test_view_share                      # issue 31: view --html, 3 inputs, server and Chromium; ~8 s
  test_layout_index                    # issue 31: every moment of synth runs and four real snapshots from checkpoints; ~15 s
  test_view_start                      # issue 31: the first screen's chunks, parts of steps, windows' steps; ~20 s
  gpu_package)                         # the GPU package, checked here: no GPU needed

set(GMT_GPU_TESTS
  gpu_cuda_malloc gpu_cuda_async gpu_cuda_managed gpu_cuda_pinned gpu_cuda_vmm gpu_cuda_fail
  gpu_cuda_nvtx
  gpu_torch_leak gpu_torch_fragment
  gpu_run_all)

if(CMAKE_SCRIPT_MODE_FILE)
  cmake_minimum_required(VERSION 3.20) # the policies of the build (IN_LIST)
  if(NOT CTEST OR NOT BUILD)
    message(FATAL_ERROR "labels.cmake: -DCTEST=<ctest> -DBUILD=<build dir> are required")
  endif()
  execute_process(COMMAND "${CTEST}" --show-only=json-v1 WORKING_DIRECTORY "${BUILD}"
                  OUTPUT_VARIABLE json RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "test_labels: ctest --show-only=json-v1 failed in ${BUILD}")
  endif()
  string(JSON n LENGTH "${json}" tests)
  if(n EQUAL 0)
    message(FATAL_ERROR "test_labels: no tests in ${BUILD}")
  endif()
  set(bad 0)
  math(EXPR last "${n} - 1")
  foreach(i RANGE ${last})
    string(JSON name GET "${json}" tests ${i} name)
    set(tiers "")
    string(JSON np ERROR_VARIABLE none LENGTH "${json}" tests ${i} properties)
    if(NOT none)
      math(EXPR plast "${np} - 1")
      foreach(j RANGE ${plast})
        string(JSON pname GET "${json}" tests ${i} properties ${j} name)
        if(pname STREQUAL "LABELS")
          string(JSON nl LENGTH "${json}" tests ${i} properties ${j} value)
          math(EXPR llast "${nl} - 1")
          foreach(k RANGE ${llast})
            string(JSON label GET "${json}" tests ${i} properties ${j} value ${k})
            if(label IN_LIST GMT_TIER_LABELS)
              list(APPEND tiers "${label}")
            endif()
          endforeach()
        endif()
      endforeach()
    endif()
    list(LENGTH tiers nt)
    if(NOT nt EQUAL 1)
      message("FAIL: ${name} has the tier labels '${tiers}', not exactly one of "
              "${GMT_TIER_LABELS}: include tests/labels.cmake in the CMakeLists.txt that adds "
              "it, and name it there in one list at most")
      math(EXPR bad "${bad} + 1")
    endif()
  endforeach()
  if(bad)
    message(FATAL_ERROR "test_labels: ${bad} of ${n} tests without exactly one tier")
  endif()
  message("test_labels: ok (${n} tests, each fast, slow or gpu)")
  return()
endif()

if(CMAKE_CURRENT_SOURCE_DIR STREQUAL "${PROJECT_SOURCE_DIR}/tests")
  add_test(NAME test_labels
    COMMAND ${CMAKE_COMMAND} -DCTEST=${CMAKE_CTEST_COMMAND} -DBUILD=${PROJECT_BINARY_DIR}
            -P ${CMAKE_CURRENT_LIST_FILE})
endif()

# At the end of the including directory (cmake_language DEFER), so that tests added below the
# include line are labelled too.
function(gmt_label_tests)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    if(t IN_LIST GMT_GPU_TESTS)
      set_property(TEST ${t} APPEND PROPERTY LABELS gpu)
    elseif(t IN_LIST GMT_SLOW_TESTS)
      set_property(TEST ${t} APPEND PROPERTY LABELS slow)
    else()
      set_property(TEST ${t} APPEND PROPERTY LABELS fast)
    endif()
  endforeach()
endfunction()
cmake_language(DEFER CALL gmt_label_tests)
