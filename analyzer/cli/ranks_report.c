/* ranks_report.c — what `ranks` prints and writes (see ranks_report.h). */
#include "ranks_report.h"

#include "json_out.h"
#include "run_print.h"
#include "units.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *growth_text(int64_t v, char *buf) {
    char b[32];
    if (v == 0)
        return strcpy(buf, "0");
    snprintf(buf, 40, "%s/step", units_bytes_signed(v, b));
    return buf;
}

void ranks_report_text(FILE *out, const rank_stats *st) {
    char b[6][64];
    fprintf(out, "memanalyze ranks: %zu rank%s read", st->read, st->read == 1 ? "" : "s");
    if (st->count > st->read)
        fprintf(out, ", %zu could not be", st->count - st->read);
    fprintf(out, "\n\n  %5s %-14s %3s %-24s %-24s %6s %-16s %5s %s\n", "rank", "host", "dev",
            "peak allocated", "peak reserved", "frag", "growth", "OOMs", "reaches the device");
    for (size_t r = 0; r < st->read; r++) {
        const rank_entry *e = &st->ranks[r];
        const run_summary *s = &e->s;
        char limit[48] = "never";
        if (s->limit_step >= 0)
            snprintf(limit, sizeof limit, "at step %lld", (long long)s->limit_step);
        fprintf(out, "  %5lld %-14.14s %3d %-24s %-24s %6.2f %-16s %5lld %s%s\n",
                (long long)e->rank, s->host[0] ? s->host : "?", s->device,
                run_print_bytes_at_step(s->peak_allocated, s->peak_allocated_step, b[0], 64),
                run_print_bytes_at_step(s->peak_reserved, s->peak_reserved_step, b[1], 64),
                s->frag_at_peak, growth_text(s->growth_per_step, b[2]), (long long)s->ooms, limit,
                e->leaking ? "  LEAKING" : "");
    }
    if (st->read) {
        const rank_entry *bn = &st->ranks[st->bottleneck];
        fprintf(out, "\n  imbalance: max / mean of peak allocated %.2f (mean %s, spread %s)\n",
                st->imbalance, units_bytes_i64(st->mean_peak, b[0]),
                units_bytes_i64(st->spread, b[1]));
        fprintf(out, "  bottleneck: rank %lld, peak allocated %s", (long long)bn->rank,
                units_bytes_i64(bn->s.peak_allocated, b[0]));
        fprintf(out, st->nexcess ? "; above the median rank at its peak:\n" : "\n");
        for (size_t i = 0; i < st->nexcess; i++)
            fprintf(out, "    +%-10s %s  (%s, the median rank %s)\n",
                    units_bytes_i64(st->excess[i].bytes - st->excess[i].median_bytes, b[0]),
                    st->excess[i].site, units_bytes_i64(st->excess[i].bytes, b[1]),
                    units_bytes_i64(st->excess[i].median_bytes, b[2]));
        if (st->first_to_run_out >= 0) {
            const rank_entry *f = &st->ranks[st->first_to_run_out];
            fprintf(out,
                    "  first to run out: rank %lld, its growth (%s) reaches its device at step "
                    "%lld\n",
                    (long long)f->rank, growth_text(f->s.growth_per_step, b[0]),
                    (long long)f->s.limit_step);
        } else {
            fprintf(out, "  first to run out: none; no rank's growth reaches its device\n");
        }
        for (size_t r = 0; r < st->read; r++) {
            const rank_entry *e = &st->ranks[r];
            if (!e->leaking)
                continue;
            const char *site = e->s.top_growth_per_step > 0 ? e->s.top_growth_site : "";
            fprintf(out, "  leaking alone: rank %lld grows %s (the median rank %s)%s%s\n",
                    (long long)e->rank, growth_text(e->s.growth_per_step, b[0]),
                    growth_text(st->median_growth, b[1]), site[0] ? ", fastest at " : "", site);
        }
    }
    for (size_t r = 1; r < st->read; r++)
        if (st->ranks[r].rank == st->ranks[r - 1].rank)
            fprintf(out,
                    "  rank %lld twice: %s and %s (both kept; the rank comes from the trace, "
                    "else the file name)\n",
                    (long long)st->ranks[r].rank, st->ranks[r - 1].input, st->ranks[r].input);
    for (size_t r = st->read; r < st->count; r++)
        fprintf(out, "  could not read %s: %s\n", st->ranks[r].input, st->ranks[r].failed);
}

void ranks_report_json(FILE *out, const rank_stats *st) {
    fputs("{\"ranks\": [", out);
    for (size_t r = 0; r < st->read; r++) {
        const rank_entry *e = &st->ranks[r];
        fprintf(out, "%s\n  {", r ? "," : "");
        run_print_json_fields(out, &e->s, e->rank);
        fputs(", \"input\": ", out);
        json_string(out, e->input);
        fprintf(out, ", \"leaking\": %s}", e->leaking ? "true" : "false");
    }
    fputs("\n], \"imbalance\": ", out);
    json_number(out, st->imbalance);
    fprintf(out, ", \"mean_peak_allocated_bytes\": %lld, \"spread_bytes\": %lld",
            (long long)st->mean_peak, (long long)st->spread);
    fputs(", \"bottleneck_rank\": ", out);
    if (st->bottleneck >= 0)
        fprintf(out, "%lld", (long long)st->ranks[st->bottleneck].rank);
    else
        fputs("null", out);
    fputs(", \"first_to_run_out\": ", out);
    if (st->first_to_run_out >= 0)
        fprintf(out, "%lld", (long long)st->ranks[st->first_to_run_out].rank);
    else
        fputs("null", out);
    fputs(", \"bottleneck_sites\": [", out);
    for (size_t i = 0; i < st->nexcess; i++) {
        fputs(i ? ", {\"site\": " : "{\"site\": ", out);
        json_string(out, st->excess[i].site);
        fprintf(out, ", \"bytes\": %lld, \"median_bytes\": %lld, \"bytes_over_median\": %lld}",
                (long long)st->excess[i].bytes, (long long)st->excess[i].median_bytes,
                (long long)(st->excess[i].bytes - st->excess[i].median_bytes));
    }
    fputs("], \"leaking_ranks\": [", out);
    int first = 1;
    for (size_t r = 0; r < st->read; r++)
        if (st->ranks[r].leaking) {
            fprintf(out, "%s%lld", first ? "" : ", ", (long long)st->ranks[r].rank);
            first = 0;
        }
    fputs("], \"duplicate_ranks\": [", out);
    first = 1;
    for (size_t r = 1; r < st->read; r++)
        if (st->ranks[r].rank == st->ranks[r - 1].rank &&
            (r < 2 || st->ranks[r - 2].rank != st->ranks[r].rank)) {
            fprintf(out, "%s%lld", first ? "" : ", ", (long long)st->ranks[r].rank);
            first = 0;
        }
    fputs("], \"failed\": [", out);
    for (size_t r = st->read; r < st->count; r++) {
        fputs(r > st->read ? ", {\"input\": " : "{\"input\": ", out);
        json_string(out, st->ranks[r].input);
        fputs(", \"error\": ", out);
        json_string(out, st->ranks[r].failed);
        fputs("}", out);
    }
    fputs("]}\n", out);
}

/* ---- --db ---------------------------------------------------------------------------------- */

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
    "  PRIMARY KEY (rank, input)) WITHOUT ROWID;\n"
    "CREATE TABLE rank_steps (rank INTEGER NOT NULL, input TEXT NOT NULL, step INTEGER NOT NULL,\n"
    "  allocated_bytes INTEGER NOT NULL, reserved_bytes INTEGER NOT NULL,\n"
    "  PRIMARY KEY (rank, input, step)) WITHOUT ROWID;\n"
    "CREATE TABLE rank_sites (rank INTEGER NOT NULL, input TEXT NOT NULL, site TEXT NOT NULL,\n"
    "  key TEXT NOT NULL, bytes_at_peak INTEGER NOT NULL,\n"
    "  PRIMARY KEY (rank, input, key)) WITHOUT ROWID;\n"
    "CREATE TABLE failed (input TEXT NOT NULL, error TEXT NOT NULL);\n";

static int write_rank(sqlite3 *db, sqlite3_stmt *const *st, const rank_stats *s, size_t r) {
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
    (void)db;
    return rc;
}

int ranks_report_write_db(const rank_stats *s, const char *path, char *err, size_t errlen) {
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
        "INSERT INTO ranks VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        "INSERT OR REPLACE INTO rank_steps VALUES (?,?,?,?,?)",
        "INSERT OR REPLACE INTO rank_sites VALUES (?,?,?,?,?)", "INSERT INTO failed VALUES (?,?)"};
    for (size_t k = 0; rc == 0 && k < 4; k++)
        rc = sqlite3_prepare_v2(db, inserts[k], -1, &st[k], NULL) == SQLITE_OK ? 0 : -1;
    for (size_t r = 0; rc == 0 && r < s->read; r++)
        rc = write_rank(db, st, s, r);
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
