# tests/recorder/core.cmake — the recorder core (session, rings, writer, stacks).
gmt_rec_test(test_rec_core)
