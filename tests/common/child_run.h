/* Run a program as a child process, its output captured: the end-to-end tests of the tools
 * (test_md_cli). */
#ifndef HALOX_TESTS_CHILD_RUN_H
#define HALOX_TESTS_CHILD_RUN_H

#include <sys/types.h>

typedef struct child_cmd {
    int code; /* exit code, or 128 + signal */
    char *out;
    char *err;
} child_cmd_t;

/* > 0: the RLIMIT_FSIZE in bytes of the children started from now on (a disk that fills up) */
extern long child_fsize_limit;

void child_cmd_free(child_cmd_t *c);
/* Start `tool` with args (NULL-terminated, at most 62); returns the pid (-1 when no pipe), with
 * pipes for its stdout and stderr. */
pid_t child_start(const char *tool, const char *const args[], int *out_fd, int *err_fd);
/* Read both pipes to the end into c (on_out, when given, is called as stdout grows until it
 * returns nonzero), then reap the child into c->code. */
void child_finish(pid_t pid, int ofd, int efd, child_cmd_t *c,
                  int (*on_out)(const char *out, pid_t pid, void *user), void *user);
/* child_start + child_finish; returns c->code. */
int child_run(const char *tool, child_cmd_t *c, const char *const args[]);

#endif
