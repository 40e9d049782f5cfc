/* Run a program as a child process for the end-to-end tests of the tools (child_run.h). */
#define _POSIX_C_SOURCE 200809L
#include "child_run.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

long child_fsize_limit;

void child_cmd_free(child_cmd_t *c)
{
    free(c->out);
    free(c->err);
    memset(c, 0, sizeof *c);
}

static void child_append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *buf = realloc(*buf, *cap);
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
}

pid_t child_start(const char *tool, const char *const args[], int *out_fd, int *err_fd)
{
    int po[2], pe[2];
    if (pipe(po) || pipe(pe))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]);
        close(pe[0]);
        close(po[1]);
        close(pe[1]);
        if (child_fsize_limit > 0) {
            /* SIGXFSZ as a shell leaves it (its default ends the process): the tool itself must
             * turn a write past the limit into EFBIG, as on a full disk, and say so */
            struct rlimit rl = {(rlim_t)child_fsize_limit, (rlim_t)child_fsize_limit};
            signal(SIGXFSZ, SIG_DFL);
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        const char *argv[64];
        int n = 0;
        argv[n++] = tool;
        for (int i = 0; args[i] && n < 63; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        execv(tool, (char *const *)argv);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    *out_fd = po[0];
    *err_fd = pe[0];
    return pid;
}

void child_finish(pid_t pid, int ofd, int efd, child_cmd_t *c,
                  int (*on_out)(const char *out, pid_t pid, void *user), void *user)
{
    size_t ol = 0, oc = 0, el = 0, ec = 0;
    c->out = calloc(1, 1);
    c->err = calloc(1, 1);
    struct pollfd pf[2] = {{ofd, POLLIN, 0}, {efd, POLLIN, 0}};
    int open_fds = 2;
    char buf[8192];
    while (open_fds > 0) {
        if (poll(pf, 2, 120000) <= 0)
            break;
        for (int k = 0; k < 2; k++) {
            if (pf[k].fd < 0 || !(pf[k].revents & (POLLIN | POLLHUP)))
                continue;
            ssize_t n = read(pf[k].fd, buf, sizeof buf);
            if (n <= 0) {
                close(pf[k].fd);
                pf[k].fd = -1;
                open_fds--;
                continue;
            }
            if (k == 0) {
                child_append(&c->out, &ol, &oc, buf, (size_t)n);
                if (on_out && on_out(c->out, pid, user))
                    on_out = NULL;
            } else {
                child_append(&c->err, &el, &ec, buf, (size_t)n);
            }
        }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    c->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int child_run(const char *tool, child_cmd_t *c, const char *const args[])
{
    int o, e;
    pid_t pid = child_start(tool, args, &o, &e);
    child_finish(pid, o, e, c, NULL, NULL);
    return c->code;
}
