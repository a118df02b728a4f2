/* cohort-info.c - explains what cohort gives each task: reads the calling
 * task's Slurm environment (or one from a file), plans against this machine
 * or an hwloc XML topology, and prints the plan. Also expands hostlists and
 * exports this machine's topology as the cache the plugin loads. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "hostlist.h"
#include "lean_load.h"
#include "mps_site.h"
#include "plan_format.h"
#include "task_plan.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: cohort-info [--all] [--mode train|infer] [--format table|json|env]\n"
            "                   [--topology FILE.xml] [--env FILE] [--cpus LIST]\n"
            "                   [--port-range A-B] [--mps]\n"
            "       cohort-info --hostnames EXPR\n"
            "       cohort-info --export-topology FILE.xml\n"
            "\n"
            "Prints the plan cohort makes for this Slurm task (run it under srun), or\n"
            "with --all for every task of this node.\n"
            "  --all               every local task of this node\n"
            "  --mode MODE         train (default, or $COHORT_MODE) or infer\n"
            "  --format FMT        table (default), json or env\n"
            "  --topology FILE     plan against this hwloc XML instead of this machine\n"
            "  --env FILE          read the Slurm variables from FILE (NAME=VALUE lines)\n"
            "  --cpus LIST         CPUs the step may use (default: all this process may)\n"
            "  --port-range A-B    range for hashed ports (default %d-%d)\n"
            "  --mps               whether the tasks would run under a step's MPS daemon\n"
            "                      (also shown when $COHORT_MPS asks for it)\n"
            "  --hostnames EXPR    expand a Slurm hostlist, one host per line\n"
            "  --export-topology F write this machine's topology as XML to F\n"
            "  --version, --help\n",
            PORTS_DEFAULT_LO, PORTS_DEFAULT_HI);
}

static int fail(const char *msg)
{
    fprintf(stderr, "cohort-info: %s\n", msg);
    return 1;
}

static int print_hostnames(const char *expr)
{
    struct hostlist *hl;
    struct cohort_err err;
    char host[HOSTLIST_MAX_NAME + 1];
    if (hostlist_parse(expr, &hl, &err) < 0)
        return fail(err.msg);
    for (uint64_t i = 0; i < hostlist_count(hl); i++) {
        hostlist_nth(hl, i, host, sizeof host);
        puts(host);
    }
    hostlist_free(hl);
    return 0;
}

static int export_topology(const char *path)
{
    struct cohort_err err;
    if (topology_export_node_lean(path, &err) < 0)
        return fail(err.msg);
    return 0;
}

/* COHORT_MPS in the task's environment asks for MPS (1, yes, or options). */
static int wants_mps(const struct task_plan *tp)
{
    const char *v = envlist_get(&tp->env, "COHORT_MPS");
    return v && *v && strcmp(v, "0") != 0 && strcmp(v, "no") != 0;
}

int main(int argc, char **argv)
{
    enum { OPT_TOPOLOGY = 256, OPT_ENV, OPT_CPUS, OPT_PORTS, OPT_HOSTNAMES, OPT_EXPORT,
           OPT_VERSION, OPT_MPS };
    static const struct option opts[] = {
        {"all", no_argument, NULL, 'a'},
        {"mode", required_argument, NULL, 'm'},
        {"format", required_argument, NULL, 'f'},
        {"topology", required_argument, NULL, OPT_TOPOLOGY},
        {"env", required_argument, NULL, OPT_ENV},
        {"cpus", required_argument, NULL, OPT_CPUS},
        {"port-range", required_argument, NULL, OPT_PORTS},
        {"hostnames", required_argument, NULL, OPT_HOSTNAMES},
        {"export-topology", required_argument, NULL, OPT_EXPORT},
        {"version", no_argument, NULL, OPT_VERSION},
        {"mps", no_argument, NULL, OPT_MPS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct task_plan_request req = {0};
    enum plan_format fmt = PLAN_TABLE;
    struct cohort_err err;
    int all = 0, mps = 0, c;
    while ((c = getopt_long(argc, argv, "am:f:h", opts, NULL)) != -1) {
        switch (c) {
        case 'a': all = 1; break;
        case 'm': req.mode = optarg; break;
        case 'f':
            if (plan_format_parse(optarg, &fmt, &err) < 0)
                return fail(err.msg);
            break;
        case OPT_TOPOLOGY: req.topology = optarg; break;
        case OPT_ENV: req.env_file = optarg; break;
        case OPT_CPUS: req.cpus = optarg; break;
        case OPT_PORTS: req.port_range = optarg; break;
        case OPT_HOSTNAMES: return print_hostnames(optarg);
        case OPT_EXPORT: return export_topology(optarg);
        case OPT_VERSION: puts("cohort-info " PACKAGE_VERSION); return 0;
        case OPT_MPS: mps = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cohort-info: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    struct task_plan tp;
    if (task_plan_build(&req, &tp, &err) < 0) {
        task_plan_free(&tp);
        return fail(err.msg);
    }
    struct mps_verdict verdict;
    if (mps || wants_mps(&tp))
        mps_decide(tp.plan, &tp.env, !req.topology && mps_site_daemon(), &verdict);
    int rc = 0;
    if (!all && tp.step.local_rank == COHORT_UNKNOWN)
        rc = fail("SLURM_PROCID and SLURM_LOCALID are not set: run under srun, or use "
                  "--all for every task of this node");
    else if (plan_print(stdout, fmt, tp.plan, tp.topo, all ? 0 : tp.step.local_rank,
                        all ? tp.plan->n_tasks : 1, mps || wants_mps(&tp) ? &verdict : NULL) < 0)
        rc = fail("cannot print the plan");
    task_plan_free(&tp);
    return rc;
}
