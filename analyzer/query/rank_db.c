/* rank_db.c — `ranks --db` (see rank_db.h): one transaction, a prepared INSERT per table, the
 * file removed again when any step fails. */
#include "rank_db.h"

#include <sqlite3.h>
#include <stdio.h>
#include <unistd.h>

static const char db_schema[] =
    "CREATE TABLE ranks (\n"
    "  rank INTEGER NOT NULL, input TEXT NOT NULL, host TEXT, device INTEGER NOT NULL,\n"
    "  settings TEXT, command TEXT, steps INTEGER NOT NULL,\n"
    "  peak_allocated_bytes INTEGER NOT NULL, peak_allocated_step INTEGER,\n"
    "  peak_requested_bytes INTEGER NOT NULL, peak_reserved_bytes INTEGER NOT NULL,\n"
    "  peak_reserved_step INTEGER, fragmentation_at_peak REAL, trapped_ratio_at_peak REAL,\n"
    "  fragmentation_mean REAL, fragmentation_max REAL, trapped_ratio_mean REAL,\n"
    "  trapped_ratio_max REAL, segments_max INTEGER, ooms INTEGER, device_memory_bytes INTEGER,\n"
    "  growth_bytes_per_step INTEGER, limit_step INTEGER, leaking INTEGER NOT NULL,\n"
    "  bottleneck INTEGER NOT NULL, first_to_run_out INTEGER NOT NULL,\n"
    "  rank_from TEXT NOT NULL, ran_out INTEGER NOT NULL, first_oom_step INTEGER,\n"
    "  fragmentation_at_end REAL, trapped_ratio_at_end REAL, device_imbalance REAL,\n"
    "  bottleneck_device INTEGER,\n"
    "  PRIMARY KEY (rank, input)) WITHOUT ROWID;\n"
    "CREATE TABLE rank_steps (rank INTEGER NOT NULL, input TEXT NOT NULL, step INTEGER NOT NULL,\n"
    "  allocated_bytes INTEGER NOT NULL, reserved_bytes INTEGER NOT NULL,\n"
    "  PRIMARY KEY (rank, input, step)) WITHOUT ROWID;\n"
    "CREATE TABLE rank_sites (rank INTEGER NOT NULL, input TEXT NOT NULL, site TEXT NOT NULL,\n"
    "  key TEXT NOT NULL, bytes_at_peak INTEGER NOT NULL,\n"
    "  PRIMARY KEY (rank, input, key)) WITHOUT ROWID;\n"
    "CREATE TABLE failed (input TEXT NOT NULL, error TEXT NOT NULL);\n";

/* One rank read: its row in ranks, its step ends, its sites at the peak. */
static int write_rank(sqlite3_stmt *const *st, const rank_stats *s, size_t r) {
    const rank_entry *e = &s->ranks[r];
    const run_summary *m = &e->s;
    sqlite3_stmt *q = st[0];
    int i = 1;
    sqlite3_bind_int64(q, i++, e->rank);
    sqlite3_bind_text(q, i++, e->input, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, i++, m->host[0] ? m->host : NULL, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, i++, m->device);
    sqlite3_bind_text(q, i++, m->settings[0] ? m->settings : NULL, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, i++, m->command[0] ? m->command : NULL, -1, SQLITE_STATIC);
    const int64_t ints[] = {m->steps,          m->peak_allocated, m->peak_allocated_step,
                            m->peak_requested, m->peak_reserved,  m->peak_reserved_step};
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++)
        if ((k == 2 || k == 5) && ints[k] < 0)
            sqlite3_bind_null(q, i++);
        else
            sqlite3_bind_int64(q, i++, ints[k]);
    const double ratios[] = {m->frag_at_peak, m->trapped_at_peak, m->frag_mean,
                             m->frag_max,     m->trapped_mean,    m->trapped_max};
    for (size_t k = 0; k < sizeof ratios / sizeof ratios[0]; k++)
        if (k >= 2 && !m->steps) /* the means and maxima over step ends: none without steps */
            sqlite3_bind_null(q, i++);
        else
            sqlite3_bind_double(q, i++, ratios[k]);
    sqlite3_bind_int64(q, i++, m->segments_max);
    sqlite3_bind_int64(q, i++, m->ooms);
    if (m->total_bytes > 0)
        sqlite3_bind_int64(q, i++, m->total_bytes);
    else
        sqlite3_bind_null(q, i++);
    sqlite3_bind_int64(q, i++, m->growth_per_step);
    if (m->limit_step >= 0)
        sqlite3_bind_int64(q, i++, m->limit_step);
    else
        sqlite3_bind_null(q, i++);
    sqlite3_bind_int(q, i++, e->leaking);
    sqlite3_bind_int(q, i++, (long)r == s->bottleneck);
    sqlite3_bind_int(q, i++, (long)r == s->first_to_run_out);
    sqlite3_bind_text(q, i++,
                      e->rank_from == RANK_FROM_TRACE  ? "trace"
                      : e->rank_from == RANK_FROM_NAME ? "file name"
                                                       : "order",
                      -1, SQLITE_STATIC);
    sqlite3_bind_int(q, i++, e->input_ooms > 0);
    if (e->first_oom_step >= 0)
        sqlite3_bind_int64(q, i++, e->first_oom_step);
    else
        sqlite3_bind_null(q, i++);
    sqlite3_bind_double(q, i++, m->frag_at_end);
    sqlite3_bind_double(q, i++, m->trapped_at_end);
    if (e->devices.bottleneck >= 0) {
        sqlite3_bind_double(q, i++, e->devices.imbalance);
        sqlite3_bind_int(q, i++, e->devices.bottleneck);
    } else {
        sqlite3_bind_null(q, i++);
        sqlite3_bind_null(q, i++);
    }
    int rc = sqlite3_step(q) == SQLITE_DONE ? 0 : -1;
    sqlite3_reset(q);
    for (size_t k = 0; rc == 0 && k < (size_t)m->steps; k++) {
        sqlite3_bind_int64(st[1], 1, e->rank);
        sqlite3_bind_text(st[1], 2, e->input, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st[1], 3, m->step_numbers[k]);
        sqlite3_bind_int64(st[1], 4, m->allocated_at_step[k]);
        sqlite3_bind_int64(st[1], 5, m->reserved_at_step[k]);
        rc = sqlite3_step(st[1]) == SQLITE_DONE ? 0 : -1;
        sqlite3_reset(st[1]);
    }
    for (size_t k = 0; rc == 0 && k < e->nsites; k++) {
        sqlite3_bind_int64(st[2], 1, e->rank);
        sqlite3_bind_text(st[2], 2, e->input, -1, SQLITE_STATIC);
        sqlite3_bind_text(st[2], 3, e->sites[k].label, -1, SQLITE_STATIC);
        sqlite3_bind_text(st[2], 4, e->sites[k].key, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st[2], 5, e->sites[k].bytes);
        rc = sqlite3_step(st[2]) == SQLITE_DONE ? 0 : -1;
        sqlite3_reset(st[2]);
    }
    return rc;
}

int rank_db_write(const rank_stats *s, const char *path, char *err, size_t errlen) {
    sqlite3 *db = NULL;
    sqlite3_stmt *st[4] = {NULL, NULL, NULL, NULL};
    unlink(path);
    int rc = sqlite3_open(path, &db) == SQLITE_OK ? 0 : -1;
    if (rc == 0)
        rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK &&
                     sqlite3_exec(db, db_schema, NULL, NULL, NULL) == SQLITE_OK
                 ? 0
                 : -1;
    static const char *const inserts[] = {
        ("INSERT INTO ranks VALUES "
         "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"),
        "INSERT OR REPLACE INTO rank_steps VALUES (?,?,?,?,?)",
        "INSERT OR REPLACE INTO rank_sites VALUES (?,?,?,?,?)", "INSERT INTO failed VALUES (?,?)"};
    for (size_t k = 0; rc == 0 && k < 4; k++)
        rc = sqlite3_prepare_v2(db, inserts[k], -1, &st[k], NULL) == SQLITE_OK ? 0 : -1;
    for (size_t r = 0; rc == 0 && r < s->read; r++)
        rc = write_rank(st, s, r);
    for (size_t r = s->read; rc == 0 && r < s->count; r++) {
        sqlite3_bind_text(st[3], 1, s->ranks[r].input, -1, SQLITE_STATIC);
        sqlite3_bind_text(st[3], 2, s->ranks[r].failed, -1, SQLITE_STATIC);
        rc = sqlite3_step(st[3]) == SQLITE_DONE ? 0 : -1;
        sqlite3_reset(st[3]);
    }
    if (rc == 0)
        rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
    if (rc != 0)
        snprintf(err, errlen, "writing %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
    for (size_t k = 0; k < 4; k++)
        sqlite3_finalize(st[k]);
    sqlite3_close(db);
    if (rc != 0)
        unlink(path);
    return rc;
}
