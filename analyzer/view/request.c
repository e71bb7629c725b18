/* request.c — endpoints.h's view_request accessors for both kinds of request (request.h): the
 * arguments of one made in this process looked up in its list, a network one's asked of
 * server.c; the blocks index given with the request, else the server's. */
#include "request.h"

#include <stdio.h>
#include <string.h>

const char *view_request_arg(const view_request *rq, const char *name) {
    if (rq->conn)
        return view_server_conn_arg(rq->conn, name);
    for (const char *const *a = rq->args; a && a[0]; a += 2)
        if (!strcmp(a[0], name))
            return a[1];
    return NULL;
}

const char *view_request_input(const view_request *rq) { return rq->input; }

/* Without a server (the share file) the one input is the request's own. */
size_t view_request_input_count(const view_request *rq) {
    return rq->s ? view_server_input_count(rq->s) : 1;
}

const char *view_request_input_name(const view_request *rq, size_t i) {
    return rq->s ? view_server_input_name(rq->s, i) : rq->input;
}

const char *view_request_input_db_path(const view_request *rq, size_t i) {
    return rq->s ? view_server_input_db_path(rq->s, i) : NULL;
}

struct view_blocks_index *view_request_blocks(const view_request *rq, int *status, char *err,
                                              size_t errlen) {
    *status = 500;
    if (rq->ix)
        return rq->ix;
    if (rq->s)
        return view_server_blocks(rq->s, rq->input_index, status, err, errlen);
    snprintf(err, errlen, "no blocks index for this request");
    return NULL;
}
