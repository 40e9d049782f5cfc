/* Reads that tests/structure/env_tables.py must refuse, scanned as if in tools/ (the test
 * env_tables_catches); never built. */
const char *undeclared(void) { return getenv("HALOX_NOT_DECLARED"); }
const char *wrong_reader(void) { return tool_env_string("HALOX_TIMEOUT_S"); }
const char *around_the_table(void) { return getenv("HALOX_COMMIT"); }
const char *not_the_library(void) { return halox_env_string("HALOX_LOG_LEVEL"); }
