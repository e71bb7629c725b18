# tests/recorder/cupti_fixture.cmake: the raw callback log (MEMREC_CALLBACK_LOG)
# and the replay of tests/fixtures/cupti/*.log through the CUPTI handler.
gmt_rec_test(test_rec_cupti_fixture gmt_analyzer)
