/* What the processes of one MPI job agree on: their inputs at start-up, and how the job ends.
 *
 * Inputs. Every rank of a job must be given the same command line, the same input files and the
 * same halox environment: ranks that are not would run inconsistent physics, or meet in
 * collectives of different sizes and hang. While parsing, a tool records each option as it
 * takes it (tool_agree_option; input files by their contents, tool_agree_input); right after
 * MPI_Init, tool_agree_inputs() compares every rank's record with rank 0's (numbers by value, so
 * "0.005" and "5e-3" agree) and, on a difference, rank 0 names the first option that differs
 * with both ranks' values ("rank 1 was given --dt 0.004 but rank 0 --dt 0.005"), and every rank
 * returns 2 at once.
 *
 * The end. tool_agree_outcome() tells every rank whether any failed: the cause is printed once
 * (the earliest failure that did not only follow another rank's), every rank gets the same exit
 * code and MPI can finish cleanly, so that a failure of one process reads as the tool's message
 * alone. Only ranks that do not reach it in time (one failed while the others wait elsewhere)
 * are aborted, after the cause is printed. */
#ifndef HALOX_TOOLS_TOOL_AGREE_H
#define HALOX_TOOLS_TOOL_AGREE_H

/* The tool's name ("halox-md"), in the program's entry and in messages. */
void tool_agree_tool(const char *tool);

/* An option as parsed: its canonical name ("--transport" for "-t") and the value given (NULL for
 * a flag). An option given several times keeps every value, in order. */
void tool_agree_option(const char *name, const char *value);

/* An input file given by `name` ("--read"): compared by its contents, not by its path (the same
 * file may be reached by other paths on other nodes). */
void tool_agree_input(const char *name, const char *path);

/* MPI builds only (HALOX_HAVE_MPI), as is tool_agree_outcome. Collective over MPI_COMM_WORLD,
 * right after MPI_Init, before anything depends on the inputs: 0 when every rank has the same
 * record, else 2 (rank 0 said which option differs). A rank that exited before it (a refused
 * command line) has the launcher end the job. */
int tool_agree_inputs(void);

/* Collective over MPI_COMM_WORLD, bounded: this rank's exit code (0: it succeeded), whether its
 * failure only followed another rank's (HALOX_ERR_ABORTED), and the line to print when its
 * failure is the cause. Returns the job's exit code (0 when every rank succeeded, else the
 * cause's), the same on every rank, after the cause's rank printed its line. A rank whose peers
 * do not arrive within wait_s (a failed rank: at most a few seconds) prints its line, when it
 * has one, and aborts the job. The caller then finishes MPI. */
int tool_agree_outcome(int code, int follower, const char *line, double wait_s);

#endif
