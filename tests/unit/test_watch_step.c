/* test_watch_step.c - the plugin's part of the step watch (watch_step.c):
 * the job's choice (--cohort-watch over COHORT_WATCH over the site's
 * watch= and watch_stall=, each bad value one line naming it), the note
 * outside train mode, COHORT_WATCH_FILE made absolute from the working
 * directory (and refused when that is gone), the agent's record
 * lines (the watch's own port when no store is served: never MASTER_PORT
 * nor the bootstrap port), the node's GPUs by local task, and the tasks'
 * variables (NCCL_PROFILER_PLUGIN never overwritten). The job's
 * environment is an envlist behind spank_getenv and spank_setenv. */
#include <errno.h>
#include <fcntl.h>
#include <slurm/spank.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostlist.h"
#include "plan.h"
#include "tap.h"
#include "watch_step.h"

/* The job's environment as slurmstepd would hold it. */
static struct envlist job;

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
    (void)sp;
    const char *v = envlist_get(&job, var);
    if (!v)
        return ESPANK_ENV_NOEXIST;
    if ((int)strlen(v) >= len)
        return ESPANK_NOSPACE;
    strcpy(buf, v);
    return ESPANK_SUCCESS;
}

spank_err_t spank_setenv(spank_t sp, const char *var, const char *val, int overwrite)
{
    (void)sp;
    if (!overwrite && envlist_get(&job, var))
        return ESPANK_ENV_EXISTS;
    return envlist_set(&job, var, val) == 0 ? ESPANK_SUCCESS : ESPANK_ERROR;
}

/* spank_env.c's take_env calls it; nothing here takes a variable out. */
spank_err_t spank_unsetenv(spank_t sp, const char *var)
{
    (void)sp;
    (void)var;
    return ESPANK_ERROR;
}

/* The job's environment made anew from NAME=VALUE pairs (NULL ends them). */
static void job_env(const char *first, ...)
{
    envlist_clear(&job);
    envlist_init(&job);
    va_list ap;
    va_start(ap, first);
    for (const char *kv = first; kv; kv = va_arg(ap, const char *)) {
        const char *eq = strchr(kv, '=');
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(eq - kv), kv);
        envlist_set(&job, name, eq + 1);
    }
    va_end(ap);
}

static struct plugin_args site(bool watch, unsigned stall_s)
{
    struct plugin_args a;
    struct cohort_err err;
    plugin_args_parse(0, NULL, &a, &err);
    a.watch = watch;
    a.watch_stall_s = stall_s;
    return a;
}

/* The choice's order: option over variable over site. */
static void test_want(void)
{
    struct plugin_args off = site(false, 120), on = site(true, 300);
    struct cohort_err err;
    unsigned s = 99;
    ok(watch_step_want(&off, NULL, false, NULL, &s, &err) == 0 && s == 0,
       "nothing asked, the site's default off: no watch");
    ok(watch_step_want(&on, NULL, false, NULL, &s, &err) == 0 && s == 300,
       "the site's watch=yes: its watch_stall");
    ok(watch_step_want(&off, "yes", false, NULL, &s, &err) == 0 && s == 120 &&
           watch_step_want(&off, "45", false, NULL, &s, &err) == 0 && s == 45 &&
           watch_step_want(&on, "no", false, NULL, &s, &err) == 0 && s == 0 &&
           watch_step_want(&on, "", false, NULL, &s, &err) == 0 && s == 300,
       "COHORT_WATCH over the site (yes: the site's seconds; empty: not given)");
    ok(watch_step_want(&off, "45", true, NULL, &s, &err) == 0 && s == 120 &&
           watch_step_want(&on, "45", true, "no", &s, &err) == 0 && s == 0 &&
           watch_step_want(&off, "no", true, "10", &s, &err) == 0 && s == 10,
       "--cohort-watch over COHORT_WATCH");
    ok(watch_step_want(&off, "soon", false, NULL, &s, &err) < 0 &&
           !strcmp(err.msg, "COHORT_WATCH='soon' is not yes, no or a number of seconds from 1 "
                            "to 86400 (how long a rank may keep the others waiting)"),
       "a bad COHORT_WATCH in one line: %s", err.msg);
    ok(watch_step_want(&off, NULL, true, "90000", &s, &err) < 0 &&
           !strcmp(err.msg, "--cohort-watch='90000' is not yes, no or a number of seconds "
                            "from 1 to 86400 (how long a rank may keep the others waiting)"),
       "a bad --cohort-watch in one line: %s", err.msg);
}

/* The watch's port: keyed, in the range, never MASTER_PORT nor the
 * bootstrap port, the same for the same step. */
static void test_port(void)
{
    struct port_range r = {.lo = PORTS_DEFAULT_LO, .hi = PORTS_DEFAULT_HI};
    unsigned bad = 0, same = 0;
    for (uint32_t id = 1; id < 400; id++) {
        uint16_t m, b;
        plan_step_ports(&(struct cohort_step){.job_id = id, .step_id = id % 7}, r, "s3cret", &m,
                        &b);
        uint16_t p = watch_step_port(id, id % 7, "s3cret", r, m, b);
        bad += p == m || p == b || p < r.lo || p > r.hi;
        same += p == watch_step_port(id, id % 7, "s3cret", r, m, b);
    }
    ok(!bad && same == 399, "399 steps: the watch's port is in the range and never the step's "
                            "MASTER_PORT or bootstrap port (%u bad)", bad);
    uint16_t k = ports_keyed(5, 2 ^ 0x80000000u, "s3cret", r, 20000);
    uint16_t next = k == r.hi ? r.lo : (uint16_t)(k + 1);
    uint16_t after = next == r.hi ? r.lo : (uint16_t)(next + 1);
    ok(watch_step_port(5, 2, "s3cret", r, 20000, k) == next,
       "the keyed port taken by the bootstrap port: the next one (%u)", next);
    ok(watch_step_port(5, 2, "s3cret", r, next, k) == after,
       "and the one after when the next is MASTER_PORT (%u)", after);
    ok(watch_step_port(5, 2, "s3cret", r, 1, 2) != watch_step_port(5, 2, "other", r, 1, 2) ||
           watch_step_port(6, 2, "s3cret", r, 1, 2) != watch_step_port(5, 2, "s3cret", r, 1, 2),
       "the port depends on the secret and the job");
}

/* A node plan of three tasks: a GPU hwloc saw, one it did not (index 3),
 * none; ports 29500 and 29501. */
struct three {
    struct cohort_topology topo;
    struct cohort_gpu gpu;
    struct cohort_task_gpu g[2];
    struct cohort_task_plan t[3];
    struct cohort_node_plan plan;
};

static void three_init(struct three *x)
{
    memset(x, 0, sizeof *x);
    snprintf(x->gpu.pci_id, sizeof x->gpu.pci_id, "0000:47:00.0");
    x->topo.gpus = &x->gpu;
    x->topo.n_gpus = 1;
    x->g[0] = (struct cohort_task_gpu){.gres = 0, .cuda = 0, .topo = 0};
    x->g[1] = (struct cohort_task_gpu){.gres = 3, .cuda = 3, .topo = -1};
    for (int i = 0; i < 3; i++)
        x->t[i] = (struct cohort_task_plan){.master_port = 29500, .bootstrap_port = 29501};
    x->t[0].gpus = &x->g[0];
    x->t[1].gpus = &x->g[1];
    x->t[0].n_gpus = x->t[1].n_gpus = 1;
    x->plan.n_tasks = 3;
    x->plan.tasks = x->t;
    snprintf(x->plan.master_addr, sizeof x->plan.master_addr, "n9");
}

/* The record's lines: the watch's, and the holder's when no store is served. */
static void test_record(void)
{
    struct three x;
    struct cohort_err err;
    struct cohort_step step = {.job_id = 77, .step_id = 3};
    struct plugin_args args = site(false, 120);
    struct watch_step w = {.stall_s = 30};
    three_init(&x);
    char *gpus = watch_step_gpus(&x.plan, &x.topo);
    ok(gpus && !strcmp(gpus, "0000:47:00.0,3,"), "the GPUs by local task: PCI id, index, none (%s)",
       gpus ? gpus : "NULL");
    free(gpus);
    hostlist_parse("n[1-2]", &step.nodes, &err);
    struct envlist r;
    envlist_init(&r);
    envlist_set(&r, "COHORT_SECRET", "s3cret");
    int rc = watch_step_record(&w, &step, &x.plan, &x.topo, &args, false, &r);
    const char *port = envlist_get(&r, "COHORT_STORE_PORT");
    char want[8];
    snprintf(want, sizeof want, "%u",
             watch_step_port(77, 3, "s3cret", args.ports, 29500, 29501));
    ok(rc == 0 && !strcmp(envlist_get(&r, "COHORT_WATCH"), "30") &&
           !strcmp(envlist_get(&r, "COHORT_WATCH_GPUS"), "0000:47:00.0,3,") &&
           !envlist_get(&r, "COHORT_WATCH_FILE"),
       "COHORT_WATCH and COHORT_WATCH_GPUS; no COHORT_WATCH_FILE when the job set none");
    ok(!strcmp(envlist_get(&r, "COHORT_STORE_SERVE"), "0") &&
           !strcmp(envlist_get(&r, "COHORT_STORE_ADDR"), "n1") && port && !strcmp(port, want) &&
           strcmp(port, "29500") && strcmp(port, "29501"),
       "no store: COHORT_STORE_SERVE=0, node 0's host, the watch's own port %s", port);
    ok(!envlist_get(&r, "COHORT_WATCH_FANOUT"), "no fanout given: none in the record");
    envlist_clear(&r);
    envlist_init(&r);
    envlist_set(&r, "COHORT_SECRET", "s3cret");
    w.fanout = 2;
    rc = watch_step_record(&w, &step, &x.plan, &x.topo, &args, false, &r);
    ok(rc == 0 && !strcmp(envlist_get(&r, "COHORT_WATCH_FANOUT"), "2"),
       "the job's fanout goes to the agents when the store is not served");
    envlist_clear(&r);
    envlist_init(&r);
    snprintf(w.file, sizeof w.file, "/home/u/verdict.json");
    rc = watch_step_record(&w, &step, &x.plan, &x.topo, &args, true, &r);
    ok(rc == 0 && !strcmp(envlist_get(&r, "COHORT_WATCH_FILE"), "/home/u/verdict.json") &&
           !envlist_get(&r, "COHORT_STORE_SERVE") && !envlist_get(&r, "COHORT_STORE_PORT") &&
           !envlist_get(&r, "COHORT_WATCH_FANOUT"),
       "with the store served: the store's holder, nothing of the watch's own; the file named");
    envlist_clear(&r);
    envlist_init(&r);
    w.stall_s = 0;
    ok(watch_step_record(&w, &step, &x.plan, &x.topo, &args, false, &r) == 0 && r.n == 0,
       "no watch: no line");
    envlist_clear(&r);
    hostlist_free(step.nodes);
}

/* watch_step_choose in train mode from a working directory that is gone
 * (removed), then back in the test's own. */
static void gone_cwd_choose(struct watch_step *w, const struct plugin_args *args)
{
    char dir[] = "/tmp/cohort-test-watch-XXXXXX";
    int here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (here < 0 || !mkdtemp(dir) || chdir(dir) < 0 || rmdir(dir) < 0) {
        printf("Bail out! %s\n", strerror(errno));
        exit(1);
    }
    watch_step_choose(w, NULL, args, NULL, false, NULL, PLUGIN_MODE_TRAIN);
    if (fchdir(here) < 0) {
        printf("Bail out! %s\n", strerror(errno));
        exit(1);
    }
    close(here);
}

/* What slurmstepd makes of the job's choice, and what the tasks get. */
static void test_choose_and_task(void)
{
    struct plugin_args args = site(false, 120);
    struct watch_step w;
    struct node_agent up = {.up = true, .dir = "/dev/shm/cohort-watch-abc"}, down = {0};
    char cwd[4096], file[4200];
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = '\0';
    snprintf(file, sizeof file, "%s/out/v.json", cwd);
    job_env("COHORT_WATCH=30", "COHORT_WATCH_FILE=out/v.json", NULL);
    watch_step_choose(&w, NULL, &args, "40", false, NULL, PLUGIN_MODE_TRAIN);
    ok(w.stall_s == 30 && !w.error[0] && !strcmp(w.file, file) &&
           !strcmp(w.profiler, COHORT_NCCL_PROFILER_PATH),
       "the job's COHORT_WATCH over srun's; a relative file from the working directory (%s); "
       "the installed profiler", w.file);
    ok(watch_step_task(NULL, &w, &up, 0) == 0 &&
           !strcmp(envlist_get(&job, "COHORT_WATCH_DIR"), "/dev/shm/cohort-watch-abc") &&
           !strcmp(envlist_get(&job, "NCCL_PROFILER_PLUGIN"), COHORT_NCCL_PROFILER_PATH),
       "a task: COHORT_WATCH_DIR and NCCL_PROFILER_PLUGIN");
    job_env("NCCL_PROFILER_PLUGIN=/mine.so", "COHORT_NCCL_PROFILER=/build/p.so", NULL);
    watch_step_choose(&w, NULL, &args, "40", false, NULL, PLUGIN_MODE_TRAIN);
    ok(w.stall_s == 40 && !strcmp(w.profiler, "/build/p.so") &&
           watch_step_task(NULL, &w, &up, 1) == 0 &&
           !strcmp(envlist_get(&job, "NCCL_PROFILER_PLUGIN"), "/mine.so"),
       "srun's COHORT_WATCH; the job's NCCL_PROFILER_PLUGIN kept; COHORT_NCCL_PROFILER read");
    job_env("COHORT_WATCH=yes", NULL);
    watch_step_choose(&w, NULL, &args, NULL, false, NULL, PLUGIN_MODE_TRAIN);
    ok(watch_step_task(NULL, &w, &down, 0) == 0 && !envlist_get(&job, "COHORT_WATCH_DIR"),
       "no agent up: no variable");
    job_env("COHORT_WATCH=30", "COHORT_WATCH_FILE=v.json", NULL);
    gone_cwd_choose(&w, &args);
    ok(w.stall_s == 0 && watch_step_task(NULL, &w, &up, 0) == 1 &&
           !strcmp(w.error, "--cohort-watch: COHORT_WATCH_FILE='v.json' is a relative path and "
                            "the job's working directory cannot be read (No such file or "
                            "directory): give an absolute path"),
       "a relative file and no working directory: the tasks fail with one line: %s", w.error);
    job_env("COHORT_WATCH=30", "COHORT_WATCH_FANOUT=4", NULL);
    watch_step_choose(&w, NULL, &args, NULL, false, NULL, PLUGIN_MODE_TRAIN);
    ok(w.stall_s == 30 && w.fanout == 4 && !w.error[0], "the job's COHORT_WATCH_FANOUT is read");
    job_env("COHORT_WATCH=30", "COHORT_WATCH_FANOUT=0", NULL);
    watch_step_choose(&w, NULL, &args, NULL, false, NULL, PLUGIN_MODE_TRAIN);
    ok(w.stall_s == 0 && watch_step_task(NULL, &w, &up, 0) == 1 &&
           !strcmp(w.error, "--cohort-watch: COHORT_WATCH_FANOUT='0' is not a number from 1 "
                            "to 65536: give one, or unset it for the default (128)"),
       "a bad COHORT_WATCH_FANOUT: the tasks fail with one line: %s", w.error);
    job_env("COHORT_WATCH=2h", NULL);
    watch_step_choose(&w, NULL, &args, NULL, false, NULL, PLUGIN_MODE_TRAIN);
    ok(w.stall_s == 0 && watch_step_task(NULL, &w, &up, 3) == 1 &&
           !strncmp(w.error, "COHORT_WATCH='2h' is not yes", 28),
       "a bad COHORT_WATCH: every task fails with it: %s", w.error);
    job_env("COHORT_WATCH=30", NULL);
    watch_step_choose(&w, NULL, &args, NULL, false, NULL, PLUGIN_MODE_INFER);
    ok(w.stall_s == 0 && !w.error[0] && watch_step_task(NULL, &w, &up, 1) == 0 &&
           !envlist_get(&job, "COHORT_WATCH_DIR") &&
           !strcmp(w.note, "cohort: note: --cohort-watch: the step watch is for train mode, "
                           "and this step's mode is infer: the step runs unwatched"),
       "infer mode: a note, no watch, no error: %s", w.note);
    job_env("COHORT_WATCH=no", NULL);
    watch_step_choose(&w, NULL, &args, NULL, true, "20", PLUGIN_MODE_TRAIN);
    ok(w.stall_s == 20, "--cohort-watch=20 over COHORT_WATCH=no");
}

int main(void)
{
    envlist_init(&job);
    test_want();
    test_port();
    test_record();
    test_choose_and_task();
    envlist_clear(&job);
    return tap_done();
}
