/* halox-md's report on stdout: the banner, the thermo table, the progress line, notices and the
 * summary table (the engine reports through its hooks; it never prints). */
#ifndef HALOX_TOOLS_MD_REPORT_H
#define HALOX_TOOLS_MD_REPORT_H

#include "halox/md.h"
#include "halox/md_options.h"

typedef struct md_printer {
    const halox_md_setup_t *s;
    int quiet;    /* no thermo table and no progress line (--quiet) */
    int silent;   /* no banner, table, progress or summary either */
    int progress; /* a progress line (on a terminal only) */
    int tty;      /* stdout is a terminal of its own (not under mpirun) */
    int header_done;
    int progress_shown;
    double last_progress;
    long long first_step;
} md_printer_t;

/* The hooks of halox_md_hooks_t, with an md_printer_t as user. */
void md_on_thermo(void *user, const halox_md_thermo_t *r);
void md_on_progress(void *user, long long step, long long last, double seconds);
void md_on_notice(void *user, const char *text);
/* Erase a progress line before other output. */
void md_clear_progress(md_printer_t *p);

/* What is run: the system, the potential, the dynamics, ranks, transport and device (and on
 * stderr when auto runs the CPU engine for want of a GPU). */
void md_print_banner(const md_printer_t *p, int nranks);
/* The summary table after a run. */
void md_print_summary(const halox_md_result_t *res);

#endif
