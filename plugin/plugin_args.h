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

struct plugin_args {
    enum cohort_plugin_mode default_mode; /* default=off|env|train|infer (off) */
    struct port_range ports;              /* port_range=A-B */
    char topology[4096];                  /* topology=FILE ("" = discover) */
    enum membind_policy membind;          /* membind=bind|interleave|none */
    bool strict;                          /* strict=yes|no: internal errors fail tasks */
};

int plugin_mode_parse(const char *text, enum cohort_plugin_mode *out,
                      struct cohort_err *err);

/* Parses argv (plugstack.conf's words after the plugin path). */
int plugin_args_parse(int argc, char **argv, struct plugin_args *out,
                      struct cohort_err *err);

#endif
