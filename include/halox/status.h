/** @file
 * halox status codes: every library call returns one of these. */
#ifndef HALOX_STATUS_H
#define HALOX_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/** The status codes, one row X(name, value, text) each: the enumerator of halox_status_t, its
 *  value and what halox_status_string() returns for it. One X-macro list gives the enum and the
 *  strings, so they never drift apart; each row's text is the code's meaning. 0 is success;
 *  errors are negative. */
#define HALOX_STATUS_LIST(X)                                                                       \
    X(HALOX_OK, 0, "success")                                                                      \
    X(HALOX_ERR_INVALID_ARG, -1, "invalid argument")                                               \
    X(HALOX_ERR_NO_MEMORY, -2, "out of memory")                                                    \
    X(HALOX_ERR_DECOMPOSITION, -3, "the decomposition cannot serve the cut-off")                   \
    X(HALOX_ERR_TIMEOUT, -4, "timed out waiting for a peer")                                       \
    X(HALOX_ERR_UNKNOWN_TRANSPORT, -5, "unknown transport")                                        \
    X(HALOX_ERR_UNAVAILABLE, -6, "feature not available in this build or on this machine")         \
    X(HALOX_ERR_ATOM_COUNT, -7, "global atom count changed")                                       \
    X(HALOX_ERR_COORDINATE, -8, "invalid coordinate")                                              \
    X(HALOX_ERR_COMM, -9, "communication failure")                                                 \
    X(HALOX_ERR_ABORTED, -10, "another rank failed")                                               \
    X(HALOX_ERR_STATE, -11, "call out of order")                                                   \
    X(HALOX_ERR_IO, -12, "input/output error")                                                     \
    X(HALOX_ERR_INTERNAL, -13, "internal error")                                                   \
    X(HALOX_ERR_WRITE, -14, "writing an output file failed")

/** A status code: HALOX_OK (0) or an error (negative), one enumerator per row of
 *  HALOX_STATUS_LIST, which gives each its value and meaning. */
typedef enum halox_status {
#define HALOX__STATUS_ENUM(name, value, text) name = value,
    HALOX_STATUS_LIST(HALOX__STATUS_ENUM)
#undef HALOX__STATUS_ENUM
} halox_status_t;

/** Short fixed description of a status code ("timed out waiting for a peer"). */
const char *halox_status_string(halox_status_t status);

/** The detailed message of the last error raised on the calling thread: what went wrong, with
 *  the numbers involved, and what to do about it. Empty when no error was raised. The library
 *  never prints and never exits: callers decide how to report. */
const char *halox_last_error(void);

/** Clear the calling thread's last error message. */
void halox_clear_error(void);

/** Record a message (printf format) as the calling thread's last error, the one
 *  halox_last_error() returns, and return `status`. For code built on halox (an engine, a
 *  plugin) that reports its own errors through the same channel as the library's, so that its
 *  caller reads one message whichever layer failed; the message may quote the library's
 *  (halox_last_error() as an argument is fine). Thread-safe: the message is per thread; it is
 *  cut at 1023 bytes. */
halox_status_t halox_set_error(halox_status_t status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif
