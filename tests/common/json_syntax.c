/* A minimal JSON syntax check for the tests of the tools' outputs (json_syntax.h). */
#include "json_syntax.h"

#include <stdlib.h>
#include <string.h>

static const char *js_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
        p++;
    return p;
}
static const char *js_value(const char *p);
static const char *js_string(const char *p)
{
    if (*p != '"')
        return NULL;
    for (p++; *p && *p != '"'; p++)
        if (*p == '\\')
            p++;
    return *p == '"' ? p + 1 : NULL;
}
static const char *js_value(const char *p)
{
    p = js_ws(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        int obj = *p == '{';
        p = js_ws(p + 1);
        if (*p == close)
            return p + 1;
        for (;;) {
            if (obj) {
                p = js_string(js_ws(p));
                if (!p)
                    return NULL;
                p = js_ws(p);
                if (*p++ != ':')
                    return NULL;
            }
            p = js_value(p);
            if (!p)
                return NULL;
            p = js_ws(p);
            if (*p == ',') {
                p++;
                continue;
            }
            return *p == close ? p + 1 : NULL;
        }
    }
    if (*p == '"')
        return js_string(p);
    if (!strncmp(p, "true", 4) || !strncmp(p, "null", 4))
        return p + 4;
    if (!strncmp(p, "false", 5))
        return p + 5;
    char *end;
    strtod(p, &end);
    return end == p ? NULL : end;
}
int json_valid(const char *s)
{
    const char *p = js_value(s);
    return p && *js_ws(p) == '\0';
}
