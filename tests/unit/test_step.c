/* test_step.c - tables of Slurm task environments -> the variables cohort
 * plans: block, cyclic, plane, uneven, arbitrary with a hostfile, reserved
 * ports, a user's MASTER_PORT, het jobs, GPUs, and malformed input. */
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "step_env.h"
#include "tap.h"

static struct cohort_topology *topo;

struct result {
    struct envlist env;
    struct cohort_step step;
    struct cohort_node_plan *plan;
    struct cohort_err err;
    int rc;
};

static void run_policy(struct result *r, const char *const *vars, const char *hostfile,
                       const struct cohort_policy *pol)
{
    memset(r, 0, sizeof *r);
    envlist_init(&r->env);
    envlist_from_envp(&r->env, (char *const *)vars);
    r->rc = step_from_env(&r->step, &r->env, hostfile, &r->err);
    if (r->rc == 0)
        r->rc = plan_node(&r->step, topo, pol, &r->env, &r->plan, &r->err);
}

static void run(struct result *r, const char *const *vars, const char *hostfile,
                enum cohort_mode mode)
{
    struct cohort_policy pol;
    policy_init(&pol);
    pol.mode = mode;
    run_policy(r, vars, hostfile, &pol);
}

static void done(struct result *r)
{
    plan_free(r->plan);
    step_free(&r->step);
    envlist_clear(&r->env);
}

/* The calling task's planned value of name (set or kept). */
static const char *var(const struct result *r, const char *name)
{
    return plan_task_var(&r->plan->tasks[r->step.local_rank], name);
}

static int is(const struct result *r, const char *name, const char *want)
{
    const char *got = var(r, name);
    return got && strcmp(got, want) == 0;
}

/* expect: "NAME=VALUE NAME=VALUE ..." */
static void check(const char *label, const char *const *vars, const char *hostfile,
                  enum cohort_mode mode, const char *expect)
{
    struct result r;
    run(&r, vars, hostfile, mode);
    if (!ok(r.rc == 0, "%s: plans (%s)", label, r.rc ? r.err.msg : "ok")) {
        done(&r);
        return;
    }
    char *copy = strdup(expect), *save = NULL;
    for (char *kv = strtok_r(copy, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(kv, '=');
        *eq = '\0';
        const char *got = var(&r, kv);
        ok(got && strcmp(got, eq + 1) == 0, "%s: %s=%s (got %s)", label, kv, eq + 1,
           got ? got : "unset");
    }
    free(copy);
    done(&r);
}

static void fails(const char *label, const char *const *vars, const char *hostfile,
                  const char *part)
{
    struct result r;
    run(&r, vars, hostfile, COHORT_MODE_TRAIN);
    ok(r.rc < 0 && strstr(r.err.msg, part) && !strchr(r.err.msg, '\n'),
       "%s: rejected naming '%s' (%s)", label, part, r.rc ? r.err.msg : "accepted");
    done(&r);
}

#define STEP(nodes, ntasks, tpn) \
    "SLURM_JOB_ID=1234", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=" nodes, \
        "SLURM_STEP_NUM_TASKS=" ntasks, "SLURM_STEP_TASKS_PER_NODE=" tpn

/* NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME from the shell's route lookup, and
 * COHORT_MODE in the plugin's env mode. */
static void socket_ifname_cases(void)
{
    const char *two_nodes[] = {STEP("n[1-2]", "2", "1(x2)"), "SLURM_NODEID=0",
                               "SLURM_PROCID=0", "SLURM_LOCALID=0", NULL};
    const char *one_node[] = {STEP("n1", "2", "2"), "SLURM_NODEID=0", "SLURM_PROCID=0",
                              "SLURM_LOCALID=0", NULL};
    const char *user_set[] = {STEP("n[1-2]", "2", "1(x2)"), "SLURM_NODEID=0",
                              "SLURM_PROCID=0", "SLURM_LOCALID=0",
                              "NCCL_SOCKET_IFNAME=^docker", NULL};
    struct cohort_policy pol;
    struct result r;
    policy_init(&pol);
    pol.socket_ifname = "eth1";
    run_policy(&r, two_nodes, NULL, &pol);
    ok(r.rc == 0 && is(&r, "NCCL_SOCKET_IFNAME", "eth1") &&
           is(&r, "GLOO_SOCKET_IFNAME", "eth1") && r.plan->n_notes == 0,
       "the route's interface becomes NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME");
    done(&r);

    run_policy(&r, user_set, NULL, &pol);
    ok(r.rc == 0 && is(&r, "NCCL_SOCKET_IFNAME", "^docker") &&
           envlist_get(&r.plan->tasks[0].kept, "NCCL_SOCKET_IFNAME") &&
           is(&r, "GLOO_SOCKET_IFNAME", "eth1"),
       "a user's NCCL_SOCKET_IFNAME is kept, GLOO_SOCKET_IFNAME still set");
    done(&r);

    pol.socket_ifname = "lo";
    pol.socket_ifname_loopback = true;
    run_policy(&r, two_nodes, NULL, &pol);
    ok(r.rc == 0 && !var(&r, "NCCL_SOCKET_IFNAME") && !var(&r, "GLOO_SOCKET_IFNAME") &&
           r.plan->n_notes == 1 && strstr(r.plan->notes[0], "loopback"),
       "a loopback route on a multi-node step sets nothing and says why");
    done(&r);

    run_policy(&r, one_node, NULL, &pol);
    ok(r.rc == 0 && is(&r, "GLOO_SOCKET_IFNAME", "lo"),
       "a loopback route on a one-node step is used");
    done(&r);

    policy_init(&pol);
    pol.socket_route_error = "cannot resolve MASTER_ADDR 'n1': Name or service not known";
    run_policy(&r, two_nodes, NULL, &pol);
    ok(r.rc == 0 && !var(&r, "NCCL_SOCKET_IFNAME") && r.plan->n_notes == 1 &&
           strstr(r.plan->notes[0], "cannot resolve MASTER_ADDR 'n1'") &&
           strstr(r.plan->notes[0], "are left unset"),
       "no route found: no socket interface, and a note saying why");
    done(&r);

    policy_init(&pol);
    run_policy(&r, one_node, NULL, &pol);
    ok(r.rc == 0 && !var(&r, "NCCL_SOCKET_IFNAME") &&
           is(&r, "COHORT_MODE", "train"),
       "no route known: no socket interface; COHORT_MODE=train");
    done(&r);

    pol.bind = false;
    run_policy(&r, one_node, NULL, &pol);
    ok(r.rc == 0 && is(&r, "COHORT_MODE", "env"),
       "variables-only policy: COHORT_MODE=env");
    done(&r);
}

/* The node's global ranks as numbers, as the plugin has them from
 * slurmstepd: taken as given (not recomputed from the layout), checked
 * against the layout's count for the node and the step's task count. */
static void node_ranks_cases(void)
{
    struct cohort_step s;
    struct cohort_err err;
    step_init(&s);
    int rc = step_set_layout(&s, "n[1-2]", "4", "2(x2)", NULL, NULL, NULL, &err);
    const uint32_t given[] = {3, 1};
    ok(rc == 0 && step_set_node_ranks(&s, 1, given, 2, &err) == 0 && s.node_id == 1 &&
           s.node_ranks[0] == 3 && s.node_ranks[1] == 1,
       "the node's ranks as numbers are taken as given");
    ok(step_set_task(&s, 1, 1, &err) == 0 && s.rank == 1 && s.local_rank == 1,
       "a task is placed against the ranks given");
    ok(step_set_node_ranks(&s, 1, given, 1, &err) < 0 &&
           strstr(err.msg, "the global ids of 1 tasks") && strstr(err.msg, "gives it 2"),
       "too few ranks for the node fail: %s", err.msg);
    const uint32_t too_big[] = {0, 4};
    ok(step_set_node_ranks(&s, 0, too_big, 2, &err) < 0 &&
           strstr(err.msg, "global id 4 but the step has 4 tasks"),
       "a rank past the step's tasks fails: %s", err.msg);
    ok(step_set_node_ranks(&s, 2, given, 2, &err) < 0 && strstr(err.msg, "SLURM_NODEID=2"),
       "a node past the step's nodes fails: %s", err.msg);
    step_free(&s);
}

int main(void)
{
    struct cohort_err err;
    if (topology_load(FIXTURES "/dgx-h100.xml", false, &topo, &err) < 0) {
        ok(0, "fixture loads: %s", err.msg);
        return tap_done();
    }
    struct cohort_policy pol;
    policy_init(&pol);
    uint16_t hm, hb;
    ports_hashed(1234, 0, pol.ports, &hm, &hb);
    char hashed[64];
    snprintf(hashed, sizeof hashed, "MASTER_PORT=%u COHORT_BOOTSTRAP_PORT=%u", hm, hb);
    socket_ifname_cases();
    node_ranks_cases();

    /* -N2 --ntasks-per-node=4 --gres=gpu:8, task 5 = node 1 local 1 */
    const char *block[] = {STEP("n[1-2]", "8", "4(x2)"), "SLURM_NODEID=1", "SLURM_PROCID=5",
                           "SLURM_LOCALID=1", "SLURM_STEP_GPUS=0,1,2,3,4,5,6,7",
                           "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", NULL};
    char expect[512];
    snprintf(expect, sizeof expect,
             "RANK=5 WORLD_SIZE=8 LOCAL_RANK=1 LOCAL_WORLD_SIZE=4 NODE_RANK=1 GROUP_RANK=1 "
             "GROUP_WORLD_SIZE=2 MASTER_ADDR=n1 CUDA_DEVICE_ORDER=PCI_BUS_ID "
             "CUDA_VISIBLE_DEVICES=0,2,4,6,1,3,5,7 %s",
             hashed);
    check("block 2x4 on 8 GPUs", block, NULL, COHORT_MODE_TRAIN, expect);

    /* -N2 -n7: 6,1 */
    const char *uneven[] = {STEP("n[1-2]", "7", "6,1"), "SLURM_NODEID=1", "SLURM_PROCID=6",
                            "SLURM_LOCALID=0", NULL};
    check("uneven 6,1", uneven, NULL, COHORT_MODE_TRAIN,
          "RANK=6 WORLD_SIZE=7 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 NODE_RANK=1 MASTER_ADDR=n1");

    /* -N3 -n9 -m cyclic: 7,1(x2); ranks 0,1,2 on n1,n2,n3, then 3..8 on n1 */
    const char *cyclic[] = {STEP("n[1-3]", "9", "7,1(x2)"), "SLURM_DISTRIBUTION=cyclic",
                            "SLURM_NODEID=0", "SLURM_PROCID=4", "SLURM_LOCALID=2", NULL};
    check("cyclic 7,1(x2)", cyclic, NULL, COHORT_MODE_TRAIN,
          "RANK=4 LOCAL_RANK=2 LOCAL_WORLD_SIZE=7 NODE_RANK=0 MASTER_ADDR=n1");
    const char *cyclic2[] = {STEP("n[1-3]", "9", "7,1(x2)"), "SLURM_DISTRIBUTION=cyclic",
                             "SLURM_NODEID=2", "SLURM_PROCID=2", "SLURM_LOCALID=0", NULL};
    check("cyclic: rank 2 on n3", cyclic2, NULL, COHORT_MODE_TRAIN,
          "RANK=2 LOCAL_RANK=0 NODE_RANK=2 LOCAL_WORLD_SIZE=1");
    const char *cyclic_wrong[] = {STEP("n[1-3]", "9", "7,1(x2)"), "SLURM_DISTRIBUTION=cyclic",
                                  "SLURM_NODEID=2", "SLURM_PROCID=8", "SLURM_LOCALID=0",
                                  NULL};
    fails("cyclic: PROCID not of this node", cyclic_wrong, NULL, "does not match");

    /* -m plane=2 over 2 nodes with 4 tasks each: n1 0,1,4,5  n2 2,3,6,7 */
    const char *plane[] = {STEP("n[1-2]", "8", "4(x2)"), "SLURM_DISTRIBUTION=plane",
                           "SLURM_DIST_PLANESIZE=2", "SLURM_NODEID=1", "SLURM_PROCID=6",
                           "SLURM_LOCALID=2", NULL};
    check("plane=2", plane, NULL, COHORT_MODE_TRAIN, "RANK=6 LOCAL_RANK=2 NODE_RANK=1");

    /* -m arbitrary, hostfile n3,n3,n2,n1: task 0 on n3; tasks per node in
     * node-list order 1(x2),2 */
    const char *arb[] = {STEP("n[1-3]", "4", "1(x2),2"), "SLURM_DISTRIBUTION=arbitrary",
                         "SLURM_HOSTFILE=/tmp/hosts", "SLURM_NODEID=2", "SLURM_PROCID=1",
                         "SLURM_LOCALID=1", NULL};
    check("arbitrary, task 0 not on the first node", arb, "n3\nn3\nn2\nn1\n",
          COHORT_MODE_TRAIN, "RANK=1 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 NODE_RANK=2 MASTER_ADDR=n3");
    fails("arbitrary without the hostfile", arb, NULL, "SLURM_HOSTFILE");
    fails("arbitrary, hostfile names a stranger", arb, "n3\nn9\nn2\nn1\n", "n9");
    fails("arbitrary, hostfile too short", arb, "n3\nn3\n", "lists 2 hosts");

    /* Reserved ports: the first two. */
    const char *resv[] = {STEP("n1", "2", "2"), "SLURM_NODEID=0", "SLURM_PROCID=1",
                          "SLURM_LOCALID=1", "SLURM_STEP_RESV_PORTS=30005-30007", NULL};
    check("reserved ports", resv, NULL, COHORT_MODE_TRAIN,
          "MASTER_PORT=30005 COHORT_BOOTSTRAP_PORT=30006");
    const char *resv1[] = {STEP("n1", "2", "2"), "SLURM_NODEID=0", "SLURM_PROCID=1",
                           "SLURM_LOCALID=1", "SLURM_STEP_RESV_PORTS=30005", NULL};
    char one[64];
    snprintf(one, sizeof one, "MASTER_PORT=30005 COHORT_BOOTSTRAP_PORT=%u", hb);
    check("one reserved port: bootstrap hashed", resv1, NULL, COHORT_MODE_TRAIN, one);

    /* A step secret keys the bootstrap port, not MASTER_PORT; reserved ports win. */
    const char *keyed[] = {STEP("n1", "2", "2"), "SLURM_NODEID=0", "SLURM_PROCID=1",
                           "SLURM_LOCALID=1", "COHORT_SECRET=0123abcd", NULL};
    char kexp[64];
    snprintf(kexp, sizeof kexp, "MASTER_PORT=%u COHORT_BOOTSTRAP_PORT=%u", hm,
             ports_keyed(1234, 0, "0123abcd", pol.ports, hm));
    check("secret keys the bootstrap port", keyed, NULL, COHORT_MODE_TRAIN, kexp);
    const char *keyed_resv[] = {STEP("n1", "2", "2"), "SLURM_NODEID=0", "SLURM_PROCID=1",
                                "SLURM_LOCALID=1", "COHORT_SECRET=0123abcd",
                                "SLURM_STEP_RESV_PORTS=30005-30007", NULL};
    check("reserved ports win over the secret", keyed_resv, NULL, COHORT_MODE_TRAIN,
          "MASTER_PORT=30005 COHORT_BOOTSTRAP_PORT=30006");

    /* The user's MASTER_PORT and MASTER_ADDR win. */
    const char *user[] = {STEP("n[1-2]", "2", "1(x2)"), "SLURM_NODEID=0", "SLURM_PROCID=0",
                          "SLURM_LOCALID=0", "SLURM_STEP_RESV_PORTS=30005-30007",
                          "MASTER_PORT=29500", "MASTER_ADDR=head", "RANK=77", NULL};
    check("user's variables kept", user, NULL, COHORT_MODE_TRAIN,
          "MASTER_PORT=29500 MASTER_ADDR=head RANK=77 COHORT_BOOTSTRAP_PORT=30006");
    const char *user_bad[] = {STEP("n1", "1", "1"), "SLURM_NODEID=0", "SLURM_PROCID=0",
                              "SLURM_LOCALID=0", "MASTER_PORT=http", NULL};
    fails("user's MASTER_PORT malformed", user_bad, NULL, "MASTER_PORT='http'");

    /* Het job: the job-level variables of the components do not leak in;
     * the step's own variables describe the world. */
    const char *het[] = {STEP("n[3-4]", "4", "2(x2)"), "SLURM_HET_SIZE=2",
                         "SLURM_JOB_NODELIST=n[1-4]", "SLURM_JOB_NODELIST_HET_GROUP_0=n[1-2]",
                         "SLURM_JOB_NODELIST_HET_GROUP_1=n[3-4]", "SLURM_NODEID=1",
                         "SLURM_PROCID=3", "SLURM_LOCALID=1", NULL};
    check("het job component", het, NULL, COHORT_MODE_TRAIN,
          "RANK=3 WORLD_SIZE=4 NODE_RANK=1 MASTER_ADDR=n3 GROUP_WORLD_SIZE=2");
    /* A het step spanning components: Slurm shows it as one step (global
     * PROCID/NODEID, combined node list and counts). */
    const char *hetstep[] = {STEP("n[1-4]", "6", "1(x2),2(x2)"), "SLURM_HET_SIZE=2",
                             "SLURM_NODEID=3", "SLURM_PROCID=5", "SLURM_LOCALID=1", NULL};
    check("het step across components", hetstep, NULL, COHORT_MODE_TRAIN,
          "RANK=5 WORLD_SIZE=6 NODE_RANK=3 LOCAL_WORLD_SIZE=2 MASTER_ADDR=n1");

    /* SLURM_GTIDS, when Slurm gives it, is the node's task list. */
    const char *gtids[] = {STEP("n[1-2]", "4", "2(x2)"), "SLURM_DISTRIBUTION=cyclic",
                           "SLURM_GTIDS=1,3", "SLURM_NODEID=1", "SLURM_PROCID=3",
                           "SLURM_LOCALID=1", NULL};
    check("SLURM_GTIDS", gtids, NULL, COHORT_MODE_TRAIN, "RANK=3 LOCAL_RANK=1");
    const char *gtid1[] = {STEP("n1", "1", "1"), "SLURM_GTIDS=0", "SLURM_NODEID=0",
                           "SLURM_PROCID=0", "SLURM_LOCALID=0", NULL};
    check("SLURM_GTIDS of a one-task step", gtid1, NULL, COHORT_MODE_TRAIN,
          "RANK=0 WORLD_SIZE=1 LOCAL_WORLD_SIZE=1");

    /* GPUs: infer mode, 2 tasks per GPU; constrained devices (CUDA numbers
     * them 0..n-1 while gres indexes are 4-7). */
    const char *infer[] = {STEP("n1", "8", "8"), "SLURM_NODEID=0", "SLURM_PROCID=3",
                           "SLURM_LOCALID=3", "SLURM_STEP_GPUS=4,5,6,7",
                           "CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_GPUS_ON_NODE=4", NULL};
    check("infer, 2 tasks per GPU, constrained", infer, NULL, COHORT_MODE_INFER,
          "CUDA_VISIBLE_DEVICES=1 COHORT_GPUS=0000:ab:00.0 LOCAL_WORLD_SIZE=8");
    /* A CUDA_VISIBLE_DEVICES the user set (Slurm manages no GPU) is kept. */
    const char *usercvd[] = {STEP("n1", "2", "2"), "SLURM_NODEID=0", "SLURM_PROCID=1",
                             "SLURM_LOCALID=1", "CUDA_VISIBLE_DEVICES=6,7", NULL};
    check("user's CUDA_VISIBLE_DEVICES kept", usercvd, NULL, COHORT_MODE_TRAIN,
          "CUDA_VISIBLE_DEVICES=6,7 COHORT_GPUS=0000:db:00.0");
    /* No GPU information: every GPU of the node is the step's. */
    const char *nogres[] = {STEP("n1", "8", "8"), "SLURM_NODEID=0", "SLURM_PROCID=7",
                            "SLURM_LOCALID=7", NULL};
    check("no gres: all node GPUs", nogres, NULL, COHORT_MODE_TRAIN,
          "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 COHORT_GPUS=0000:db:00.0 OMP_NUM_THREADS=14");

    /* Malformed input: one line naming the variable. */
    const char *no_nodes[] = {"SLURM_JOB_ID=1", "SLURM_STEP_ID=0", NULL};
    fails("outside a step", no_nodes, NULL, "SLURM_STEP_NODELIST is not set");
    const char *bad_nodes[] = {STEP("n[2-1]", "2", "1(x2)"), "SLURM_NODEID=0", NULL};
    fails("bad node list", bad_nodes, NULL, "SLURM_STEP_NODELIST");
    const char *bad_tpn[] = {STEP("n[1-2]", "2", "1(x3)"), "SLURM_NODEID=0", NULL};
    fails("more counts than nodes", bad_tpn, NULL, "SLURM_STEP_TASKS_PER_NODE");
    const char *bad_sum[] = {STEP("n[1-2]", "5", "2(x2)"), "SLURM_NODEID=0", NULL};
    fails("counts do not add up", bad_sum, NULL, "adds up to 4");
    const char *bad_tpn2[] = {STEP("n[1-2]", "2", "1(2)"), "SLURM_NODEID=0", NULL};
    fails("malformed counts", bad_tpn2, NULL, "malformed");
    const char *bad_node[] = {STEP("n[1-2]", "2", "1(x2)"), "SLURM_NODEID=2", NULL};
    fails("node id out of range", bad_node, NULL, "SLURM_NODEID=2");
    const char *bad_id[] = {STEP("n1", "1", "1"), "SLURM_NODEID=0", "SLURM_PROCID=x",
                            "SLURM_LOCALID=0", NULL};
    fails("malformed PROCID", bad_id, NULL, "SLURM_PROCID='x'");
    const char *half[] = {STEP("n1", "1", "1"), "SLURM_NODEID=0", "SLURM_PROCID=0", NULL};
    fails("PROCID without LOCALID", half, NULL, "SLURM_LOCALID is not set");
    const char *bad_dist[] = {STEP("n1", "1", "1"), "SLURM_DISTRIBUTION=spiral",
                              "SLURM_NODEID=0", NULL};
    fails("unknown distribution", bad_dist, NULL, "SLURM_DISTRIBUTION='spiral'");
    const char *bad_gpus[] = {STEP("n1", "1", "1"), "SLURM_NODEID=0", "SLURM_STEP_GPUS=0,,1",
                              NULL};
    fails("malformed SLURM_STEP_GPUS", bad_gpus, NULL, "SLURM_STEP_GPUS");
    const char *bad_resv[] = {STEP("n1", "1", "1"), "SLURM_NODEID=0",
                              "SLURM_STEP_RESV_PORTS=3-", NULL};
    fails("malformed SLURM_STEP_RESV_PORTS", bad_resv, NULL, "SLURM_STEP_RESV_PORTS");
    const char *bad_job[] = {"SLURM_JOB_ID=12a", "SLURM_STEP_ID=0", NULL};
    fails("malformed job id", bad_job, NULL, "SLURM_JOB_ID='12a'");
    const char *bad_gt[] = {STEP("n1", "2", "2"), "SLURM_GTIDS=0", "SLURM_NODEID=0", NULL};
    fails("SLURM_GTIDS disagrees", bad_gt, NULL, "SLURM_GTIDS");

    topology_free(topo);
    return tap_done();
}
