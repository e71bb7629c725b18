/* db_file.c — a database's temporaries, their clean-up after a kill, and the rename into place
 * (see db_file.h). */
#include "db_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEMP_MARK ".tmp-"

/* What may follow the pid in a temporary's name: the database, table mode's staging database
 * (db_writer.c), and the rollback journal SQLite kept beside either (an older memanalyze's). */
static const char *const temp_suffixes[] = {"", ".staging", "-journal", ".staging-journal"};

static const char *kind_of(mode_t m) {
    if (S_ISLNK(m))
        return "a symbolic link";
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISCHR(m) || S_ISBLK(m))
        return "a device";
    if (S_ISSOCK(m))
        return "a socket";
    return "something else";
}

int db_file_replaceable(const char *path, char *err, size_t errlen) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISREG(st.st_mode))
        return 0;
    snprintf(err, errlen, "%s is %s, not a regular file: not replaced", path, kind_of(st.st_mode));
    return -1;
}

int db_file_temp(const char *path, const char *suffix, int mode, char *name, size_t len, char *err,
                 size_t errlen) {
    int n = snprintf(name, len, "%s" TEMP_MARK "%ld%s", path, (long)getpid(), suffix);
    if (n < 0 || (size_t)n >= len) {
        snprintf(err, errlen, "%s: the path is too long", path);
        return -1;
    }
    /* One of this name is ours from before, or a dead process's that had our pid. */
    struct stat st;
    if (lstat(name, &st) == 0 && st.st_uid == geteuid())
        unlink(name);
    int fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", name, strerror(errno));
        return -1;
    }
    /* Where the file system has no such locks, the pid alone tells a sweep it is in use. */
    (void)flock(fd, LOCK_EX | LOCK_NB);
    return fd;
}

int db_file_publish(const char *tmp, const char *path, char *err, size_t errlen) {
    if (db_file_replaceable(path, err, errlen) != 0)
        return -1;
    static const char *const beside[] = {"-journal", "-wal", "-shm"};
    for (size_t i = 0; i < sizeof beside / sizeof beside[0]; i++) {
        char side[PATH_MAX + 16];
        if (snprintf(side, sizeof side, "%s%s", path, beside[i]) < (int)sizeof side)
            unlink(side);
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot move the database into place at %s: %s", path,
                 strerror(errno));
        return -1;
    }
    return 0;
}

/* The pid in a temporary's name, `base` TEMP_MARK pid suffix (base NULL: a cached database's
 * name, "…-<16 hex digits>.db"); 0 when the name is not a temporary's. */
static long temp_pid(const char *name, const char *base) {
    const char *mark = NULL;
    for (const char *p = strstr(name, TEMP_MARK); p; p = strstr(p + 1, TEMP_MARK))
        mark = p; /* the last one: a base may hold the mark too */
    if (!mark)
        return 0;
    size_t n = (size_t)(mark - name);
    if (base && (strlen(base) != n || strncmp(name, base, n)))
        return 0;
    if (!base) {
        if (n < 21 || strncmp(mark - 3, ".db", 3) || mark[-20] != '-')
            return 0;
        for (const char *h = mark - 19; h < mark - 3; h++)
            if (!strchr("0123456789abcdef", *h))
                return 0;
    }
    const char *digits = mark + strlen(TEMP_MARK);
    if (*digits < '1' || *digits > '9')
        return 0;
    char *end;
    errno = 0;
    long pid = strtol(digits, &end, 10);
    if (errno || pid <= 0 || pid > INT_MAX)
        return 0;
    for (size_t i = 0; i < sizeof temp_suffixes / sizeof temp_suffixes[0]; i++)
        if (!strcmp(end, temp_suffixes[i]))
            return pid;
    return 0;
}

int db_file_write(const char *path, const char *what, db_file_writer write, void *ctx, char *err,
                  size_t errlen) {
    char tmp[4096];
    if (db_file_replaceable(path, err, errlen) != 0)
        return -1;
    int fd = db_file_temp(path, "", 0600, tmp, sizeof tmp, err, errlen);
    if (fd < 0)
        return -1;
    int copy = dup(fd); /* stdio's: fd keeps the file's lock until the rename */
    FILE *f = copy >= 0 ? fdopen(copy, "wb") : NULL;
    int rc = -1;
    if (!f) {
        snprintf(err, errlen, "%s %s: cannot write it", what, tmp);
        if (copy >= 0)
            close(copy);
    } else {
        rc = write(f, ctx, err, errlen);
        if (fclose(f) != 0 && rc == 0) {
            snprintf(err, errlen, "%s %s: cannot write it: %s", what, tmp, strerror(errno));
            rc = -1;
        }
    }
    if (rc == 0)
        rc = db_file_publish(tmp, path, err, errlen);
    if (rc != 0)
        unlink(tmp);
    close(fd);
    return rc;
}

int db_file_map(const char *path, const void **map, size_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    *map = m;
    *size = (size_t)st.st_size;
    return 0;
}

void db_file_sweep(const char *dir, const char *base) {
    DIR *d = opendir(dir);
    if (!d)
        return;
    int dfd = dirfd(d);
    uid_t me = geteuid();
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = temp_pid(e->d_name, base);
        if (!pid || pid == (long)getpid())
            continue;
        /* Alive, or a process we may not signal: alive. A reused pid keeps the file, for now. */
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        struct stat st, opened;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != me)
            continue;
        int fd = openat(dfd, e->d_name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            continue;
        /* Locked: its process lives where the pid means another (a container, another host). */
        if (fstat(fd, &opened) == 0 && opened.st_dev == st.st_dev && opened.st_ino == st.st_ino &&
            flock(fd, LOCK_EX | LOCK_NB) == 0)
            unlinkat(dfd, e->d_name, 0);
        close(fd);
    }
    closedir(d);
}
