/* ranks_import.c — one child per input, `jobs` at a time (see ranks_import.h). A child writes
 * one record to its pipe, a status byte then the database path or the error, and exits; the
 * parent reads it when the child is gone. Records are a few KiB, below a pipe's capacity, so a
 * child never waits for its parent. */
#include "ranks_import.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct child {
    pid_t pid;
    int fd; /* read end of its pipe */
    size_t input;
} child;

static void write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* In the child: the database of one input, reported on fd. */
static void import_one(const rank_input *in, const input_options *opt, int fd) {
    char db_path[sizeof in->db_path], err[sizeof in->error];
    int rc = input_database(in->path, opt, db_path, sizeof db_path, err, sizeof err);
    char status = rc == 0 ? 'y' : 'n';
    write_all(fd, &status, 1);
    const char *text = rc == 0 ? db_path : err;
    write_all(fd, text, strlen(text));
}

static void collect(rank_input *in, int fd, int status) {
    char buf[sizeof in->db_path + 8];
    size_t used = 0;
    for (;;) {
        ssize_t r = read(fd, buf + used, sizeof buf - 1 - used);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || (used += (size_t)r) == sizeof buf - 1)
            break;
    }
    buf[used] = 0;
    close(fd);
    if (used > 0 && buf[0] == 'y' && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        size_t n = strlen(buf + 1);
        if (n < sizeof in->db_path) { /* a path cut short would name another file */
            memcpy(in->db_path, buf + 1, n + 1);
            in->ok = 1;
        } else {
            snprintf(in->error, sizeof in->error, "%.400s: its database path is too long",
                     in->path);
        }
    } else if (used > 0 && buf[0] == 'n') {
        snprintf(in->error, sizeof in->error, "%.500s", buf + 1);
    } else if (WIFSIGNALED(status)) {
        snprintf(in->error, sizeof in->error, "%s: the import died (signal %d)", in->path,
                 WTERMSIG(status));
    } else {
        snprintf(in->error, sizeof in->error, "%s: the import ended without an answer", in->path);
    }
}

int ranks_import_all(rank_input *inputs, size_t n, int jobs, const input_options *opt) {
    if (jobs < 1)
        jobs = 1;
    child *running = calloc((size_t)jobs, sizeof *running);
    if (!running)
        return -1;
    size_t next = 0, active = 0, started = 0;
    fflush(NULL); /* nothing buffered is written twice by a child */
    /* A parent that ignores SIGCHLD would have the children reaped behind waitpid's back:
     * their answers would be lost. The default, for the imports only. */
    struct sigaction dfl = {.sa_handler = SIG_DFL}, saved;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGCHLD, &dfl, &saved);
    while (next < n || active) {
        while (next < n && active < (size_t)jobs) {
            /* cached, or a database: no process needed (a fleet re-read costs a stat each) */
            int found = input_find_database(inputs[next].path, opt, inputs[next].db_path,
                                            sizeof inputs[next].db_path, inputs[next].error,
                                            sizeof inputs[next].error);
            if (found != 1) {
                inputs[next].ok = found == 0;
                next++;
                continue;
            }
            int fds[2];
            if (pipe(fds) != 0) {
                snprintf(inputs[next].error, sizeof inputs[next].error,
                         "%s: no pipe for its import: %s", inputs[next].path, strerror(errno));
                next++;
                continue;
            }
            pid_t pid = fork();
            if (pid == 0) {
                close(fds[0]);
                input_options quiet = *opt;
                quiet.quiet = 1; /* many at once: no progress lines over each other */
                import_one(&inputs[next], &quiet, fds[1]);
                _exit(0);
            }
            close(fds[1]);
            if (pid < 0) {
                close(fds[0]);
                snprintf(inputs[next].error, sizeof inputs[next].error,
                         "%s: no process for its import: %s", inputs[next].path, strerror(errno));
                next++;
                continue;
            }
            size_t slot = 0;
            while (running[slot].pid)
                slot++;
            running[slot] = (child){pid, fds[0], next++};
            active++;
            started++;
        }
        if (!active)
            break;
        int status;
        pid_t done = waitpid(-1, &status, 0);
        if (done < 0) {
            if (errno == EINTR)
                continue;
            /* no child left to wait for (reaped by someone else): what each one wrote before
             * it went is still in its pipe */
            for (int k = 0; k < jobs; k++)
                if (running[k].pid) {
                    collect(&inputs[running[k].input], running[k].fd, 0);
                    running[k].pid = 0;
                }
            active = 0;
            continue;
        }
        for (int k = 0; k < jobs; k++)
            if (running[k].pid == done) {
                collect(&inputs[running[k].input], running[k].fd, status);
                running[k].pid = 0;
                active--;
                break;
            }
    }
    sigaction(SIGCHLD, &saved, NULL);
    free(running);
    int any = started > 0;
    for (size_t i = 0; i < n && !any; i++)
        any = inputs[i].ok || inputs[i].error[0];
    return any || !n ? 0 : -1;
}

/* ---- the inputs named: files, and directories of them ---------------------------------- */

static int add_path(input_list *l, const char *path) {
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **grown = realloc(l->paths, cap * sizeof *grown);
        if (!grown)
            return -1;
        l->paths = grown;
        l->cap = cap;
    }
    return (l->paths[l->count++] = strdup(path)) ? 0 : -1;
}

/* A file in a directory given as input is a rank's when its name says trace, snapshot or
 * database; other files (logs, the job's scripts) are not inputs. */
static int looks_like_input(const char *name) {
    static const char *const endings[] = {".zst", ".db", ".sqlite", ".pickle", ".pkl"};
    size_t n = strlen(name);
    if (name[0] == '.')
        return 0;
    for (size_t i = 0; i < sizeof endings / sizeof endings[0]; i++) {
        size_t e = strlen(endings[i]);
        if (n > e && !strcmp(name + n - e, endings[i]))
            return 1;
    }
    return 0;
}

static int by_string(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* An input named twice (a file and its directory, or twice over) is read once: the first
 * time, as given, and its other names dropped. */
void input_list_drop_repeats(input_list *l) {
    size_t kept = 0;
    char(*real)[PATH_MAX] = malloc((l->count ? l->count : 1) * sizeof *real);
    for (size_t i = 0; i < l->count; i++) {
        if (real && !realpath(l->paths[i], real[kept]))
            snprintf(real[kept], sizeof real[kept], "%s", l->paths[i]);
        int seen = 0;
        for (size_t k = 0; real && k < kept && !seen; k++)
            seen = !strcmp(real[k], real[kept]);
        if (seen) {
            free(l->paths[i]);
            continue;
        }
        l->paths[kept++] = l->paths[i];
    }
    l->count = kept;
    free(real);
}

int input_list_expand(input_list *l, const char *arg) {
    struct stat st;
    if (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode))
        return add_path(l, arg); /* a missing file fails in its import, with its message */
    DIR *dir = opendir(arg);
    if (!dir)
        return add_path(l, arg);
    size_t first = l->count;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(dir))) {
        if (!looks_like_input(e->d_name))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", arg, e->d_name);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            rc = add_path(l, path);
    }
    closedir(dir);
    qsort(l->paths + first, l->count - first, sizeof *l->paths, by_string);
    return rc;
}

void input_list_free(input_list *l) {
    for (size_t i = 0; i < l->count; i++)
        free(l->paths[i]);
    free(l->paths);
    *l = (input_list){0};
}
