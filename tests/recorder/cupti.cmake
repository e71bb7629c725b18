# tests/recorder/cupti.cmake: the CUPTI callback handler, fed real params structs
# (and the analyzer, which must replay what it records without a warning).
gmt_rec_test(test_rec_cupti gmt_analyzer)
