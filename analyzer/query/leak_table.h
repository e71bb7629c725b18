/* leak_table.h — what `memanalyze leaks` says about one device and a window, as one struct
 * that its text and its JSON both print: the sites whose live bytes grow from step to step,
 * ranked by growth, and the sites holding blocks never freed, each with its label.
 *
 * The numbers are analysis_site_growth's (DESIGN.md: growth = the median of a site's per-step
 * changes in live bytes at step ends, so state created once in step 0 is not a leak); what is
 * decided here is which sites each list shows. */
#ifndef GMT_LEAK_TABLE_H
#define GMT_LEAK_TABLE_H

#include "analysis.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* A site's growth with its label (stack_labels_distinct over the sites the lists show). */
typedef struct leak_site {
    site_growth g;
    char site[256];
} leak_site;

typedef struct leak_table {
    int device;
    size_t windows;   /* step-to-step changes measured; 0: fewer than two step ends, so growth
                         cannot be measured */
    size_t step_ends; /* the step ends they span: windows + 1, or 0 without windows */
    leak_site *sites; /* analysis_site_growth's order (growth, then never-freed bytes): the
                         first `top` */
    size_t nsites;
    leak_site *growing; /* the first `top` sites whose live bytes grow (growth_per_step > 0) */
    size_t ngrowing;
    leak_site *never_freed; /* the first `top` sites with blocks allocated in the window and
                               live at its end */
    size_t nnever_freed;
} leak_table;

/* The leaks of `device` in [from, to], `top` sites per list (leak_table_release frees them).
 * 0, or -1 with the database's message in err. */
int leak_table_read(sqlite3 *db, int device, int64_t from, int64_t to, size_t top, leak_table *out,
                    char *err, size_t errlen);
void leak_table_release(leak_table *t);

#endif
