/* cohort-launch.c - the plugin's work without the plugin: run as
 * `srun [srun options] cohort-launch [options] -- CMD ARGS...` it plans this
 * task from the SLURM_* variables, sets the variables, binds CPUs and memory,
 * and execs CMD. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apply.h"
#include "config.h"
#include "plan_line.h"
#include "task_plan.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: srun [srun options] cohort-launch [options] -- CMD [ARGS...]\n"
            "\n"
            "Sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, ...,\n"
            "CUDA_VISIBLE_DEVICES, binds CPUs and memory next to the task's GPU, and\n"
            "runs CMD. Variables already set are left alone.\n"
            "  --mode MODE         train (default, or $COHORT_MODE) or infer\n"
            "  --verbose           print the task's plan as one line on stderr\n"
            "  --topology FILE     this machine's topology cache (cohort-info\n"
            "                      --export-topology) instead of discovering it\n"
            "  --membind POLICY    bind (default), interleave or none\n"
            "  --port-range A-B    range for hashed ports (default %d-%d)\n"
            "  --strict            fail when binding is refused (default: warn, run)\n"
            "  --version, --help\n",
            PORTS_DEFAULT_LO, PORTS_DEFAULT_HI);
}

static int fail(const char *msg)
{
    fprintf(stderr, "cohort-launch: %s\n", msg);
    return 1;
}

static int set_var(const char *name, const char *value, void *ctx)
{
    (void)ctx;
    return setenv(name, value, 1);
}

int main(int argc, char **argv)
{
    enum { OPT_TOPOLOGY = 256, OPT_MEMBIND, OPT_PORTS, OPT_STRICT, OPT_VERSION };
    static const struct option opts[] = {
        {"mode", required_argument, NULL, 'm'},
        {"verbose", no_argument, NULL, 'v'},
        {"topology", required_argument, NULL, OPT_TOPOLOGY},
        {"membind", required_argument, NULL, OPT_MEMBIND},
        {"port-range", required_argument, NULL, OPT_PORTS},
        {"strict", no_argument, NULL, OPT_STRICT},
        {"version", no_argument, NULL, OPT_VERSION},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct task_plan_request req = {.find_route = true};
    enum membind_policy mem = MEMBIND_BIND;
    struct cohort_err err;
    int verbose = 0, strict = 0, c;
    while ((c = getopt_long(argc, argv, "+m:vh", opts, NULL)) != -1) {
        switch (c) {
        case 'm': req.mode = optarg; break;
        case 'v': verbose = 1; break;
        case OPT_TOPOLOGY:
            req.topology = optarg;
            req.topology_is_this_system = true;
            break;
        case OPT_MEMBIND:
            if (membind_parse(optarg, &mem, &err) < 0)
                return fail(err.msg);
            break;
        case OPT_PORTS: req.port_range = optarg; break;
        case OPT_STRICT: strict = 1; break;
        case OPT_VERSION: puts("cohort-launch " PACKAGE_VERSION); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "cohort-launch: no command given\n");
        usage(stderr);
        return 2;
    }
    if (!getenv("SLURM_STEP_NODELIST"))
        return fail("not inside a Slurm job step (SLURM_STEP_NODELIST is not set); run "
                    "it as: srun [options] cohort-launch -- CMD");
    struct task_plan tp;
    if (task_plan_build(&req, &tp, &err) < 0) {
        task_plan_free(&tp);
        return fail(err.msg);
    }
    if (tp.step.local_rank == COHORT_UNKNOWN) {
        task_plan_free(&tp);
        return fail("SLURM_PROCID and SLURM_LOCALID are not set: run cohort-launch "
                    "through srun, one per task");
    }
    const struct cohort_task_plan *t = &tp.plan->tasks[tp.step.local_rank];
    char note[1024], line[2048];
    if (apply_env(t, set_var, NULL) != 0) {
        task_plan_free(&tp);
        return fail("cannot set the task's variables (out of memory)");
    }
    if (apply_binding(tp.topo, t, mem, note, sizeof note, &err) < 0) {
        if (strict) {
            task_plan_free(&tp);
            return fail(err.msg);
        }
        fprintf(stderr, "cohort-launch: warning: %s; running without that binding\n", err.msg);
    }
    if (verbose) {
        plan_line(line, sizeof line, tp.plan, tp.topo, tp.step.local_rank);
        fprintf(stderr, "%s%s%s\n", line, note[0] ? "; " : "", note);
        for (unsigned i = 0; i < tp.plan->n_notes; i++)
            fprintf(stderr, "cohort: note: %s\n", tp.plan->notes[i]);
    }
    task_plan_free(&tp);
    execvp(argv[optind], argv + optind);
    fprintf(stderr, "cohort-launch: cannot run %s: %m\n", argv[optind]);
    return 127;
}
