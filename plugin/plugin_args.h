/* plugin_args.h - the plugstack.conf arguments of spank_cohort.so, parsed
 * strictly: key=value pairs, each key known, each value checked. */
#ifndef COHORT_PLUGIN_ARGS_H
#define COHORT_PLUGIN_ARGS_H

#include <stdbool.h>

#include "apply.h"
#include "ports.h"

enum cohort_plugin_mode {
    PLUGIN_MODE_OFF,   /* leave the job alone */
    PLUGIN_MODE_ENV,   /* set variables, bind nothing */
    PLUGIN_MODE_TRAIN, /* variables and binding, train layout */
    PLUGIN_MODE_INFER, /* variables and binding, infer layout */
};

/* MPS for a step (infer mode, a GPU shared by tasks): the site's default,
 * or a job's --cohort-mps / COHORT_MPS. */
struct mps_args {
    bool on;          /* mps=yes|no (no) */
    unsigned threads; /* mps_threads=1..100: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; 0: unset */
    char mem[32];     /* mps_mem=SIZE (e.g. 8G): CUDA_MPS_PINNED_DEVICE_MEM_LIMIT; "": unset */
};

struct plugin_args {
    enum cohort_plugin_mode default_mode; /* default=off|env|train|infer (off) */
    struct port_range ports;              /* port_range=A-B */
    char topology[4096];                  /* topology=FILE ("" = discover) */
    char topology_cache[4096];            /* topology_cache=DIR|no (TOPO_CACHE_DIR);
                                             "" = no cache of the plugin's own */
    enum membind_policy membind;          /* membind=bind|interleave|none */
    bool strict;                          /* strict=yes|no: internal errors fail tasks */
    bool secret_munge;                    /* secret=random|munge: srun makes the step's
                                             secret and Slurm carries it (random), or none
                                             is made and the runtime asks munge (munge) */
    struct mps_args mps;                  /* mps=, mps_threads=, mps_mem= */
    bool store;                           /* store=yes|no (no): the site's default for
                                             --cohort-store (PyTorch's store served by
                                             cohort's node agents, train mode) */
    char mps_control[4096];               /* mps_control=PATH of nvidia-cuda-mps-control
                                             ("" = /usr/bin, then /usr/local/cuda/bin) */
    bool watch;                           /* watch=yes|no (no): the site's default for
                                             --cohort-watch (the step watch, train mode) */
    unsigned watch_stall_s;               /* watch_stall=SECONDS (WATCH_STALL_DEFAULT_S):
                                             the watch's SECONDS when the job gives none */
};

int plugin_mode_parse(const char *text, enum cohort_plugin_mode *out,
                      struct cohort_err *err);

/* A job's --cohort-mps value (NULL: the option without one, i.e. yes) or
 * COHORT_MPS: yes, no, 1, 0, or a comma list of yes, no, threads=N and
 * mem=SIZE, applied over *m (the site's defaults). */
int mps_args_parse(const char *text, struct mps_args *m, struct cohort_err *err);

/* A job's --cohort-store value (NULL: the option without one, i.e. yes) or
 * COHORT_STORE: yes, no, 1 or 0. */
int store_arg_parse(const char *text, bool *out, struct cohort_err *err);

/* The longest stall a watch takes, in seconds (a day). */
#define WATCH_STALL_MAX_S 86400

/* A job's --cohort-watch value (NULL: the option without one, i.e. yes) or
 * COHORT_WATCH: yes (the watch with dflt_s seconds), no or 0 (no watch), or
 * SECONDS from 1 to WATCH_STALL_MAX_S. *stall_s gets the seconds, 0 for no
 * watch. */
int watch_arg_parse(const char *text, unsigned dflt_s, unsigned *stall_s,
                    struct cohort_err *err);

/* Parses argv (plugstack.conf's words after the plugin path). */
int plugin_args_parse(int argc, char **argv, struct plugin_args *out,
                      struct cohort_err *err);

#endif
