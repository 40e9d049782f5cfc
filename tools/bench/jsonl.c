/* Just enough JSON reading for scaling: top-level string, number and boolean fields of one
 * object per line (the records this tool writes, or any flat-enough JSON object). */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* End of the string starting at the quote s (the closing quote), or NULL. */
static const char *string_end(const char *s)
{
    for (const char *p = s + 1; *p; p++) {
        if (*p == '\\' && p[1])
            p++;
        else if (*p == '"')
            return p;
    }
    return NULL;
}

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* The value of a top-level key, or NULL. */
static const char *find_value(const char *obj, const char *key)
{
    const size_t klen = strlen(key);
    int depth = 0, want_key = 0;
    for (const char *p = obj; *p; p++) {
        if (*p == '"') {
            const char *e = string_end(p);
            if (!e)
                return NULL;
            if (depth == 1 && want_key) {
                const char *colon = skip_ws(e + 1);
                if (*colon == ':' && (size_t)(e - p - 1) == klen && !strncmp(p + 1, key, klen))
                    return skip_ws(colon + 1);
                want_key = 0;
            }
            p = e;
        } else if (*p == '{' || *p == '[') {
            depth++;
            want_key = depth == 1 && *p == '{';
        } else if (*p == '}' || *p == ']') {
            depth--;
        } else if (*p == ',' && depth == 1) {
            want_key = 1;
        }
    }
    return NULL;
}

int json_get_str(const char *obj, const char *key, char *out, size_t cap)
{
    const char *v = find_value(obj, key);
    const char *e = v && *v == '"' ? string_end(v) : NULL;
    if (!e || cap == 0)
        return 0;
    size_t n = 0;
    for (const char *p = v + 1; p < e && n + 1 < cap; p++) {
        if (*p == '\\' && p + 1 < e)
            p++; /* escapes kept as the escaped character (enough for names) */
        out[n++] = *p;
    }
    out[n] = '\0';
    return 1;
}

int json_get_num(const char *obj, const char *key, double *out)
{
    const char *v = find_value(obj, key);
    if (!v)
        return 0;
    char *end;
    double d = strtod(v, &end);
    if (end == v)
        return 0;
    *out = d;
    return 1;
}

int json_get_bool(const char *obj, const char *key, int *out)
{
    const char *v = find_value(obj, key);
    if (v && !strncmp(v, "true", 4))
        *out = 1;
    else if (v && !strncmp(v, "false", 5))
        *out = 0;
    else
        return 0;
    return 1;
}
