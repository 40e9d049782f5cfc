/* Status strings and the per-thread detailed error message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "halox/status.h"

/* Per thread, so that threads-transport ranks never overwrite each other's messages. */
static _Thread_local char halox__last_error[1024];

const char *halox_status_string(halox_status_t status)
{
    switch (status) {
#define HALOX__STATUS_CASE(name, value, text)                                                      \
    case name:                                                                                     \
        return text;
        HALOX_STATUS_LIST(HALOX__STATUS_CASE)
#undef HALOX__STATUS_CASE
    }
    return "unknown status";
}

const char *halox_last_error(void) { return halox__last_error; }

void halox_clear_error(void) { halox__last_error[0] = '\0'; }

halox_status_t halox_set_error(halox_status_t status, const char *fmt, ...)
{
    /* into a buffer of its own first: callers pass the last message as an argument ("...: %s",
     * halox_last_error()), and formatting into the buffer being read garbles it */
    char msg[sizeof halox__last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(halox__last_error, msg, sizeof msg);
    return status;
}
