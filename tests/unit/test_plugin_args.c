/* test_plugin_args.c - plugstack.conf arguments: defaults, every key, and a
 * clear message for unknown keys and bad values. */
#include <string.h>

#include "plugin_args.h"
#include "tap.h"

static int parse(const char *a, const char *b, struct plugin_args *out, struct cohort_err *err)
{
    char *argv[2] = {(char *)a, (char *)b};
    return plugin_args_parse((a != NULL) + (b != NULL), argv, out, err);
}

int main(void)
{
    struct plugin_args a;
    struct cohort_err err = {0};
    ok(parse(NULL, NULL, &a, &err) == 0 && a.default_mode == PLUGIN_MODE_OFF &&
           a.membind == MEMBIND_BIND && !a.strict && a.ports.lo == PORTS_DEFAULT_LO &&
           !a.topology[0],
       "no arguments: off, bind, not strict, default ports, no topology cache");
    ok(parse("default=env", "port_range=61000-65000", &a, &err) == 0 &&
           a.default_mode == PLUGIN_MODE_ENV && a.ports.lo == 61000 && a.ports.hi == 65000,
       "default= and port_range=");
    ok(parse("topology=/etc/cohort/node.xml", "membind=interleave", &a, &err) == 0 &&
           strcmp(a.topology, "/etc/cohort/node.xml") == 0 && a.membind == MEMBIND_INTERLEAVE,
       "topology= and membind=");
    ok(parse("strict=yes", NULL, &a, &err) == 0 && a.strict, "strict=yes");
    ok(parse("defualt=env", NULL, &a, &err) < 0 && strstr(err.msg, "unknown argument 'defualt'"),
       "unknown key named: %s", err.msg);
    ok(parse("default=fast", NULL, &a, &err) < 0 && strstr(err.msg, "default=fast") &&
           strstr(err.msg, "off, env, train, infer"),
       "bad mode named with the choices: %s", err.msg);
    ok(parse("port_range=5-1", NULL, &a, &err) < 0 && strstr(err.msg, "port_range=5-1"),
       "bad port range named: %s", err.msg);
    ok(parse("membind=all", NULL, &a, &err) < 0 && strstr(err.msg, "membind=all"),
       "bad membind named: %s", err.msg);
    ok(parse("strict=maybe", NULL, &a, &err) < 0 && strstr(err.msg, "yes or no"),
       "bad strict named: %s", err.msg);
    ok(parse("topology=", NULL, &a, &err) < 0 && strstr(err.msg, "file name"),
       "empty topology named: %s", err.msg);
    ok(parse("verbose", NULL, &a, &err) < 0 && strstr(err.msg, "not key=value"),
       "bare word named: %s", err.msg);
    return tap_done();
}
