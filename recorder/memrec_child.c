/* memrec_child.c — the launcher's process work: is a CUDA driver usable,
 * run the command, end the way it ended (see memrec_launch.h).
 *
 * The probe runs in a throwaway child so the launcher itself never loads
 * the driver (a driver that hangs or crashes in cuInit costs the probe, not
 * memrec) and the command's own cuInit is the first in its process.
 *
 * Signals: memrec is a transparent wrapper. It forwards SIGINT, SIGTERM,
 * SIGHUP and SIGQUIT that a process sent to it (si_code not SI_KERNEL): a
 * terminal's Ctrl-C already reaches the command through the foreground
 * process group, so forwarding it would deliver it twice. Signals memrec
 * found ignored (nohup) stay ignored and are not forwarded. The command
 * starts with memrec's original dispositions and signal mask, and a failed
 * exec reports its errno through a close-on-exec pipe. */
#include "memrec_launch.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the driver probe ----------------------------------------------------- */

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_device_get_count_fn)(int *);

/* Runs in the probe child; the reason goes into `why`. Returns 1 usable. */
static int probe_driver(char *why, size_t whylen) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda) {
        snprintf(why, whylen, "libcuda.so.1 not found");
        return 0;
    }
    cu_init_fn cu_init;
    cu_device_get_count_fn cu_count;
    *(void **)&cu_init = dlsym(cuda, "cuInit");
    *(void **)&cu_count = dlsym(cuda, "cuDeviceGetCount");
    if (!cu_init || !cu_count) {
        snprintf(why, whylen, "libcuda.so.1 lacks cuInit");
        return 0;
    }
    int rc = cu_init(0);
    if (rc == 100) /* CUDA_ERROR_NO_DEVICE */
        snprintf(why, whylen, "no CUDA device");
    else if (rc == 34) /* CUDA_ERROR_STUB_LIBRARY */
        snprintf(why, whylen, "only the CUDA stub library is installed");
    else if (rc == 35) /* CUDA_ERROR_INSUFFICIENT_DRIVER */
        snprintf(why, whylen, "the CUDA driver is older than the runtime");
    else if (rc != 0)
        snprintf(why, whylen, "cuInit failed with CUDA error %d", rc);
    if (rc != 0)
        return 0;
    int count = 0;
    if (cu_count(&count) != 0 || count <= 0) {
        snprintf(why, whylen, "no CUDA device");
        return 0;
    }
    return 1;
}

int memrec_cuda_usable(char *why, size_t whylen) {
    int fds[2];
    snprintf(why, whylen, "the driver probe could not run");
    if (pipe2(fds, O_CLOEXEC) != 0)
        return 0;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return 0;
    }
    if (pid == 0) {
        close(fds[0]);
        alarm(30); /* a hung driver must not hang memrec */
        char reason[200] = "";
        int usable = probe_driver(reason, sizeof reason);
        ssize_t ignored = write(fds[1], reason, strlen(reason));
        (void)ignored;
        _exit(usable ? 0 : 1);
    }
    close(fds[1]);
    char reason[200];
    size_t got = 0;
    for (;;) {
        ssize_t n = read(fds[0], reason + got, sizeof reason - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
        if (got == sizeof reason - 1)
            break;
    }
    reason[got] = 0;
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 1;
    if (WIFSIGNALED(status))
        snprintf(why, whylen, "the driver probe died of signal %d", WTERMSIG(status));
    else if (got)
        snprintf(why, whylen, "%s", reason);
    return 0;
}

/* ---- running the command -------------------------------------------------- */

static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define FORWARDED_COUNT (sizeof forwarded_signals / sizeof forwarded_signals[0])

static volatile sig_atomic_t command_pid;

static void forward_signal(int sig, siginfo_t *info, void *context) {
    (void)context;
    if (command_pid > 0 && info->si_code != SI_KERNEL)
        kill((pid_t)command_pid, sig);
}

int memrec_run(char **argv, memrec_child_status *st, char *err, size_t errlen) {
    memset(st, 0, sizeof *st);
    struct sigaction original[FORWARDED_COUNT];
    sigset_t forwarded, original_mask;
    sigemptyset(&forwarded);
    for (size_t i = 0; i < FORWARDED_COUNT; i++)
        sigaddset(&forwarded, forwarded_signals[i]);
    /* No forwarded signal may arrive between fork and knowing the pid. */
    sigprocmask(SIG_BLOCK, &forwarded, &original_mask);
    for (size_t i = 0; i < FORWARDED_COUNT; i++) {
        sigaction(forwarded_signals[i], NULL, &original[i]);
        if (original[i].sa_handler == SIG_IGN)
            continue;
        struct sigaction forward = {.sa_sigaction = forward_signal, .sa_flags = SA_SIGINFO};
        sigemptyset(&forward.sa_mask);
        sigaction(forwarded_signals[i], &forward, NULL);
    }

    int exec_error[2] = {-1, -1};
    int piped = pipe2(exec_error, O_CLOEXEC) == 0;
    pid_t pid = fork();
    if (pid == 0) {
        for (size_t i = 0; i < FORWARDED_COUNT; i++)
            sigaction(forwarded_signals[i], &original[i], NULL);
        sigprocmask(SIG_SETMASK, &original_mask, NULL);
        if (piped)
            close(exec_error[0]);
        execvp(argv[0], argv);
        int e = errno;
        if (piped) {
            ssize_t ignored = write(exec_error[1], &e, sizeof e);
            (void)ignored;
        }
        _exit(e == ENOENT ? 127 : 126);
    }
    int rc = 0;
    if (pid < 0) {
        snprintf(err, errlen, "cannot start %s: %s", argv[0], strerror(errno));
        st->exited = 1;
        st->code = 126;
        rc = -1;
    } else {
        command_pid = pid;
        sigprocmask(SIG_SETMASK, &original_mask, NULL);
        if (piped) {
            close(exec_error[1]);
            exec_error[1] = -1;
            int e = 0;
            ssize_t n;
            while ((n = read(exec_error[0], &e, sizeof e)) < 0 && errno == EINTR) {
            }
            if (n == (ssize_t)sizeof e) {
                snprintf(err, errlen, "cannot run %s: %s", argv[0], strerror(e));
                rc = -1;
            }
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        command_pid = 0;
        st->exited = WIFEXITED(status);
        st->code = st->exited ? WEXITSTATUS(status) : 0;
        st->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        st->core_dumped = WIFSIGNALED(status) && WCOREDUMP(status);
    }
    for (int i = 0; i < 2; i++)
        if (exec_error[i] >= 0)
            close(exec_error[i]);
    for (size_t i = 0; i < FORWARDED_COUNT; i++)
        sigaction(forwarded_signals[i], &original[i], NULL);
    sigprocmask(SIG_SETMASK, &original_mask, NULL);
    return rc;
}

int memrec_exit_status(const memrec_child_status *st, const char *command, int quiet) {
    if (st->exited)
        return st->code;
    int sig = st->signal;
    if (sig == SIGINT) {
        /* Die of it, so a calling shell knows the user interrupted. No core. */
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
    } else if (sig != SIGPIPE && !quiet) {
        fprintf(stderr, "memrec: %s: %s%s\n", command, strsignal(sig),
                st->core_dumped ? " (core dumped)" : "");
    }
    return 128 + sig;
}
