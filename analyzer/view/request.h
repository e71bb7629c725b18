/* request.h — what an endpoint's request is (endpoints.h's view_request), for view/'s files
 * only: one from the network (server.c's connection, its arguments read from the URL) or one
 * made in this process from a list of arguments (the server's memos at the start, the share
 * file's answers: share_file.h). The endpoints cannot tell them apart, so the share file's
 * answers are the server's answers, byte for byte. */
#ifndef GMT_VIEW_REQUEST_H
#define GMT_VIEW_REQUEST_H

#include "endpoints.h"

#include <stddef.h>

struct view_server;
struct view_blocks_index;

struct view_request {
    void *conn;                   /* server.c's connection, or NULL: the arguments are `args` */
    const struct view_server *s;  /* the server that answers, or NULL (the share file) */
    const char *const *args;      /* name, value, name, value ..., NULL (when conn is NULL) */
    const char *input;            /* the input as the user named it */
    size_t input_index;           /* input=I: which of the server's inputs (0 without a server) */
    struct view_blocks_index *ix; /* the blocks index when s is NULL, or NULL: none */
};

/* server.c's side: a network request's argument `name`, the calling worker thread's blocks
 * index of an input (view_request_blocks' contract), and the server's inputs. */
const char *view_server_conn_arg(void *conn, const char *name);
struct view_blocks_index *view_server_blocks(const struct view_server *s, size_t input, int *status,
                                             char *err, size_t errlen);
size_t view_server_input_count(const struct view_server *s);
const char *view_server_input_name(const struct view_server *s, size_t i);
const char *view_server_input_db_path(const struct view_server *s, size_t i);

#endif
