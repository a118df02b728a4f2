/* test_plugin_args.c - plugstack.conf arguments: defaults, every key, and a
 * clear message for unknown keys and bad values; the values jobs give
 * --cohort-mps and --cohort-watch (and their variables). */
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
    ok(parse(NULL, NULL, &a, &err) == 0 && !a.secret_munge, "secret: random by default");
    ok(parse("secret=munge", NULL, &a, &err) == 0 && a.secret_munge, "secret=munge");
    ok(parse("secret=munge", "secret=random", &a, &err) == 0 && !a.secret_munge,
       "secret=random after munge: the last wins");
    ok(parse("secret=plain", NULL, &a, &err) < 0 && strstr(err.msg, "secret=plain") &&
           strstr(err.msg, "random or munge"),
       "bad secret named with the choices: %s", err.msg);
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
    ok(parse(NULL, NULL, &a, &err) == 0 && !a.mps.on && !a.mps.threads && !a.mps.mem[0] &&
           !a.mps_control[0],
       "no arguments: MPS off, no limits, the usual nvidia-cuda-mps-control");
    ok(parse("mps=yes", "mps_threads=50", &a, &err) == 0 && a.mps.on && a.mps.threads == 50,
       "mps=yes, mps_threads=50");
    ok(parse("mps_mem=8G", "mps_control=/opt/cuda/bin/nvidia-cuda-mps-control", &a, &err) == 0 &&
           !strcmp(a.mps.mem, "8G") && !strcmp(a.mps_control, "/opt/cuda/bin/nvidia-cuda-mps-control"),
       "mps_mem=8G, mps_control=PATH");
    ok(parse("mps=maybe", NULL, &a, &err) < 0 && strstr(err.msg, "mps='maybe' is not yes or no"),
       "bad mps named: %s", err.msg);
    ok(parse("mps_threads=0", NULL, &a, &err) < 0 && strstr(err.msg, "1 to 100") &&
           parse("mps_threads=101", NULL, &a, &err) < 0 && parse("mps_threads=5x", NULL, &a, &err) < 0,
       "mps_threads outside 1-100 refused: %s", err.msg);
    ok(parse("mps_mem=8T", NULL, &a, &err) < 0 && strstr(err.msg, "such as 8G") &&
           parse("mps_mem=G", NULL, &a, &err) < 0 && parse("mps_mem=", NULL, &a, &err) < 0,
       "mps_mem not a size refused: %s", err.msg);
    ok(parse("mps_control=nvidia-cuda-mps-control", NULL, &a, &err) < 0 &&
           strstr(err.msg, "absolute path"),
       "a relative mps_control refused: %s", err.msg);
    ok(parse(NULL, NULL, &a, &err) == 0 && !strcmp(a.topology_cache, "/run/cohort"),
       "the plugin's own topology cache in /run/cohort by default");
    ok(parse("topology_cache=/var/cache/cohort", NULL, &a, &err) == 0 &&
           !strcmp(a.topology_cache, "/var/cache/cohort") &&
           parse("topology_cache=no", NULL, &a, &err) == 0 && !a.topology_cache[0],
       "topology_cache=DIR and topology_cache=no");
    ok(parse("topology_cache=cache", NULL, &a, &err) < 0 && strstr(err.msg, "absolute directory"),
       "a relative topology_cache refused: %s", err.msg);
    struct mps_args m = {0};
    ok(mps_args_parse(NULL, &m, &err) == 0 && m.on, "--cohort-mps alone: yes");
    ok(mps_args_parse("no", &m, &err) == 0 && !m.on && mps_args_parse("1", &m, &err) == 0 &&
           m.on && mps_args_parse("0", &m, &err) == 0 && !m.on,
       "yes, no, 1, 0");
    ok(mps_args_parse("threads=25,mem=512M", &m, &err) == 0 && m.on && m.threads == 25 &&
           !strcmp(m.mem, "512M"),
       "threads=25,mem=512M: on, with both limits");
    struct mps_args keep = m;
    ok(mps_args_parse("threads=0", &m, &err) < 0 && strstr(err.msg, "threads '0'") &&
           m.threads == 25 && mps_args_parse("fast", &m, &err) < 0 &&
           strstr(err.msg, "'fast' is not yes, no, threads=PERCENT or mem=SIZE") &&
           !memcmp(&m, &keep, sizeof m),
       "a bad value named, the settings before kept: %s", err.msg);
    ok(parse(NULL, NULL, &a, &err) == 0 && !a.watch && a.watch_stall_s == 120,
       "no arguments: no watch, 120 s of stall");
    ok(parse("watch=yes", "watch_stall=300", &a, &err) == 0 && a.watch && a.watch_stall_s == 300,
       "watch=yes, watch_stall=300");
    ok(parse("watch=on", NULL, &a, &err) < 0 && !strcmp(err.msg, "argument 'watch=on': "
                                                         "watch='on' is not yes or no"),
       "bad watch named: %s", err.msg);
    ok(parse("watch_stall=0", NULL, &a, &err) < 0 &&
           !strcmp(err.msg, "argument 'watch_stall=0': '0' is not a number of seconds from 1 "
                            "to 86400") &&
           parse("watch_stall=86401", NULL, &a, &err) < 0 &&
           parse("watch_stall=2m", NULL, &a, &err) < 0 &&
           parse("watch_stall=", NULL, &a, &err) < 0 &&
           parse("watch_stall=-5", NULL, &a, &err) < 0 &&
           parse("watch_stall= 5", NULL, &a, &err) < 0,
       "watch_stall outside 1-86400 or not a number refused: %s", err.msg);
    ok(parse("watch_stall=86400", NULL, &a, &err) == 0 && a.watch_stall_s == 86400 &&
           parse("watch_stall=1", NULL, &a, &err) == 0 && a.watch_stall_s == 1,
       "watch_stall=1 and 86400 taken");
    ok(parse("wach=yes", NULL, &a, &err) < 0 && strstr(err.msg, "unknown argument 'wach'") &&
           strstr(err.msg, "watch, watch_stall)"),
       "unknown key: the watch keys among the known ones: %s", err.msg);
    unsigned stall = 7;
    ok(watch_arg_parse(NULL, 90, &stall, &err) == 0 && stall == 90 &&
           watch_arg_parse("yes", 80, &stall, &err) == 0 && stall == 80,
       "--cohort-watch alone and yes: the default seconds");
    ok(watch_arg_parse("no", 90, &stall, &err) == 0 && stall == 0 &&
           watch_arg_parse("0", 90, &stall, &err) == 0 && stall == 0,
       "no and 0: no watch");
    ok(watch_arg_parse("1", 90, &stall, &err) == 0 && stall == 1 &&
           watch_arg_parse("600", 90, &stall, &err) == 0 && stall == 600 &&
           watch_arg_parse("86400", 90, &stall, &err) == 0 && stall == 86400,
       "SECONDS: 1, 600, 86400");
    stall = 33;
    ok(watch_arg_parse("2m", 90, &stall, &err) < 0 && stall == 33 &&
           !strcmp(err.msg, "'2m' is not yes, no or a number of seconds from 1 to 86400 (how "
                            "long a rank may keep the others waiting)"),
       "a bad value named with what to give, the seconds kept: %s", err.msg);
    ok(watch_arg_parse("86401", 90, &stall, &err) < 0 &&
           watch_arg_parse("", 90, &stall, &err) < 0 &&
           watch_arg_parse("+5", 90, &stall, &err) < 0 &&
           watch_arg_parse("YES", 90, &stall, &err) < 0,
       "86401, empty, +5 and YES refused");
    return tap_done();
}
