/* A minimal JSON syntax check (objects, arrays, strings, numbers, true/false/null) for the
 * tests of the tools' outputs. */
#ifndef HALOX_TESTS_JSON_SYNTAX_H
#define HALOX_TESTS_JSON_SYNTAX_H

/* 1 when s is one JSON value and nothing else (white space aside) */
int json_valid(const char *s);

#endif
