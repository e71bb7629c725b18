/* test_rec_python_c.c — the C side of Python frames (issue 6) in a process
 * that is not Python: MEMREC_STACKS parsing, memrec_python_attach refusing,
 * and MEMREC_STACKS=python falling back to native stacks when no Python is
 * attached. The frames themselves are checked by test_rec_python.py, which
 * needs a real CPython. */
#include "check.h"
#include "gmt_env.h"
#include "rec_core.h"
#include "rec_python.h"
#include "rec_readback.h"

#include <stdlib.h>
#include <unistd.h>

static int stacks_from_env(const char *value, char *err, size_t errlen) {
    if (value)
        setenv(GMT_ENV_MEMREC_STACKS, value, 1);
    else
        unsetenv(GMT_ENV_MEMREC_STACKS);
    rec_config c;
    if (rec_config_from_env(&c, err, errlen) != 0)
        return -1;
    return c.stacks;
}

int main(void) {
    char err[300] = "";
    CHECK_EQ_U64(stacks_from_env(NULL, err, sizeof err), REC_STACKS_MIXED);
    CHECK_EQ_U64(stacks_from_env("mixed", err, sizeof err), REC_STACKS_MIXED);
    CHECK_EQ_U64(stacks_from_env("python", err, sizeof err), REC_STACKS_PYTHON);
    CHECK_EQ_U64(stacks_from_env("native", err, sizeof err), REC_STACKS_NATIVE);
    CHECK(stacks_from_env("Python", err, sizeof err) == -1);
    CHECK_STR_EQ(err, GMT_ENV_MEMREC_STACKS " must be mixed, python or native, not \"Python\"");
    unsetenv(GMT_ENV_MEMREC_STACKS);

    /* No CPython in this process: attaching fails and changes nothing. */
    CHECK(memrec_python_attach() == -1);
    CHECK(memrec_python_attach() == -1);

    rb_tmpdir("test_rec_python_c");
    rec_config c;
    rb_config(&c, "python.zst", 16);
    c.stacks = REC_STACKS_PYTHON;
    CHECK(rec_session_start(&c, err, sizeof err) == 0);
    uint32_t ids[2];
    for (volatile int i = 0; i < 2; i++) /* one call site: one stack */
        ids[i] = rec_stack_here(0);
    CHECK(ids[0] != 0);
    CHECK(ids[1] == ids[0]);
    CHECK(rec_session_stop() == 0);
    return rb_finish("test_rec_python_c");
}
