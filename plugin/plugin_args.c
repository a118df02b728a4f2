/* plugin_args.c - strict parsing of plugstack.conf arguments. */
#include "plugin_args.h"

#include <stdio.h>
#include <string.h>

static const char *const mode_names[] = {"off", "env", "train", "infer"};

int plugin_mode_parse(const char *text, enum cohort_plugin_mode *out, struct cohort_err *err)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(text, mode_names[i]) == 0) {
            *out = (enum cohort_plugin_mode)i;
            return 0;
        }
    return cohort_fail(err, "mode '%s' is not one of off, env, train, infer", text);
}

int plugin_args_parse(int argc, char **argv, struct plugin_args *out, struct cohort_err *err)
{
    memset(out, 0, sizeof *out);
    out->default_mode = PLUGIN_MODE_OFF;
    out->ports.lo = PORTS_DEFAULT_LO;
    out->ports.hi = PORTS_DEFAULT_HI;
    out->membind = MEMBIND_BIND;
    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        struct cohort_err e;
        if (!eq)
            return cohort_fail(err, "argument '%s' is not key=value", argv[i]);
        size_t klen = (size_t)(eq - argv[i]);
        const char *v = eq + 1;
        int rc = 0;
        if (klen == 7 && strncmp(argv[i], "default", 7) == 0)
            rc = plugin_mode_parse(v, &out->default_mode, &e);
        else if (klen == 10 && strncmp(argv[i], "port_range", 10) == 0)
            rc = port_range_parse(v, &out->ports, &e);
        else if (klen == 8 && strncmp(argv[i], "topology", 8) == 0) {
            if (!*v || strlen(v) >= sizeof out->topology)
                rc = cohort_fail(&e, "topology= needs a file name");
            else
                snprintf(out->topology, sizeof out->topology, "%s", v);
        } else if (klen == 7 && strncmp(argv[i], "membind", 7) == 0)
            rc = membind_parse(v, &out->membind, &e);
        else if (klen == 6 && strncmp(argv[i], "strict", 6) == 0) {
            if (strcmp(v, "yes") == 0 || strcmp(v, "no") == 0)
                out->strict = strcmp(v, "yes") == 0;
            else
                rc = cohort_fail(&e, "strict='%s' is not yes or no", v);
        } else
            return cohort_fail(err,
                               "unknown argument '%.*s' (known: default, port_range, "
                               "topology, membind, strict)",
                               (int)klen, argv[i]);
        if (rc)
            return cohort_fail(err, "argument '%s': %s", argv[i], e.msg);
    }
    return 0;
}
