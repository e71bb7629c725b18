# tests/recorder/core.cmake — the recorder core (session, rings, writer, stacks).
gmt_rec_test(test_rec_core)
gmt_rec_test(test_rec_output)   # where a trace is written: %r/%h, one name raced for
