#define _POSIX_C_SOURCE 200809L
/* The input files of --read, line by line: the reader, the tokens and numbers of a line, the
 * frame a scan keeps (read.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/status.h"
#include "systems/read.h"

int md__text_next(md__in_t *in)
{
    ssize_t len = getline(&in->line, &in->cap, in->fp);
    if (len < 0)
        return 0;
    in->pos += len;
    in->lineno++;
    return 1;
}

/* the line in a message: at most 40 characters, without its end of line */
const char *md__text_shown(const char *line, char buf[48])
{
    snprintf(buf, 48, "%.40s", line);
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf;
}

halox_status_t md__frame_keep(md__frame_t *f, long long index, long long count_line, long long n,
                              const md__in_t *in)
{
    char *head = strdup(in->line);
    if (!head)
        return halox_set_error(HALOX_ERR_NO_MEMORY, "no memory");
    free(f->head);
    f->head = head;
    f->head[strcspn(f->head, "\r\n")] = '\0';
    f->index = index;
    f->count_line = count_line;
    f->natoms = n;
    f->head_line = in->lineno;
    f->first_line = in->lineno + 1;
    f->first_at = in->pos;
    return HALOX_OK;
}

/* 1 when the line holds an atom count alone (blanks around it allowed): 0 to 2^31-1. */
int md__text_count(const char *line, long long *n_p)
{
    const char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p < '0' || *p > '9')
        return 0;
    char *end;
    errno = 0;
    long long n = strtoll(p, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
    if (*end || errno || n > 2147483647LL)
        return 0;
    *n_p = n;
    return 1;
}

int md__text_blank(const char *line) { return line[strspn(line, " \t\r\n")] == '\0'; }

/* A number filling a whole token. */
int md__text_number(const char *tok, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(tok, &end);
    return end != tok && (*end == '\0' || md__text_is_blank(*end)) && isfinite(*v);
}

/* The starts of the first `want` blank-separated tokens of a line; how many there are. */
int md__text_tokens(const char *line, int want, const char **tok)
{
    int k = 0;
    const char *p = line;
    while (k < want) {
        while (*p && md__text_is_blank(*p))
            p++;
        if (!*p)
            break;
        tok[k++] = p;
        while (*p && !md__text_is_blank(*p))
            p++;
    }
    return k;
}
