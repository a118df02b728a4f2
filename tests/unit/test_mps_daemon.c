/* test_mps_daemon.c - the plugin's MPS daemon and its quit client get
 * exactly the job's user's groups, however many, never slurmstepd's. The
 * test does what slurmstepd does around the hooks: user_init runs with the
 * user's effective ids and groups (here 100 supplementary groups, more than
 * a fixed-size list of 64 holds), the step's end with root's groups back.
 * The stand-in daemon (tests/cluster/fake-mps-control) leaves a line with
 * its ids and groups in record/ beside it, for the daemon and the client.
 * Needs root (skipped otherwise). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mps.h"
#include "tap.h"

#define NGROUPS 100
#define USER_ID 65534
#define FIRST_GID 20001

/* Copies the stand-in into dir as an executable. */
static int copy_fake(const char *dir, char *dst, size_t len)
{
    snprintf(dst, len, "%s/fake-mps-control", dir);
    int in = open(FAKE_MPS, O_RDONLY | O_CLOEXEC);
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
    char buf[8192];
    ssize_t n = 0;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            n = -1;
    int rc = in < 0 || out < 0 || n < 0 ? -1 : 0;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    return rc;
}

/* The record of ROLE (daemon or client) in dir/record: its groups as a
 * sorted, comma-separated list; "" when there is none. */
static void record_of(const char *dir, const char *role, char *groups, size_t len)
{
    char path[512], line[4096];
    groups[0] = '\0';
    snprintf(path, sizeof path, "%s/record", dir);
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, role, strlen(role)) != 0)
            continue;
        snprintf(path, sizeof path, "%s/record/%s", dir, e->d_name);
        FILE *f = fopen(path, "re");
        const char *g = f && fgets(line, sizeof line, f) ? strstr(line, "groups=") : NULL;
        if (g)
            snprintf(groups, len, "%s", g + 7);
        groups[strcspn(groups, "\n")] = '\0';
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
}

/* The groups a child of the user must have: the user's gid, then the 100. */
static void want_groups(char *buf, size_t len)
{
    int used = snprintf(buf, len, "%d", USER_ID);
    for (int i = 0; i < NGROUPS && used > 0 && (size_t)used < len; i++)
        used += snprintf(buf + used, len - (size_t)used, ",%d", FIRST_GID + i);
}

int main(void)
{
    if (geteuid() != 0) {
        tap_skip("the MPS daemon's groups: needs root (setgroups)");
        return tap_done();
    }
    char dir[] = "/tmp/cohort-test-mps-XXXXXX", fake[512], rec[512];
    gid_t many[NGROUPS], root_groups[] = {0};
    for (int i = 0; i < NGROUPS; i++)
        many[i] = (gid_t)(FIRST_GID + i);
    snprintf(rec, sizeof rec, "%s/record", mkdtemp(dir) ? dir : "/nonexistent");
    if (chmod(dir, 0755) < 0 || copy_fake(dir, fake, sizeof fake) < 0 || mkdir(rec, 0777) < 0 ||
        chmod(rec, 01777) < 0) {
        printf("Bail out! cannot prepare %s: %s\n", dir, strerror(errno));
        return 1;
    }
    /* user_init: the user's effective ids and groups, as slurmstepd sets them */
    struct mps_daemon d;
    struct cohort_err err;
    err.msg[0] = '\0';
    int started = -1;
    if (setgroups(NGROUPS, many) == 0 && setegid(USER_ID) == 0 && seteuid(USER_ID) == 0)
        started = mps_start(&d, fake, USER_ID, USER_ID, &err);
    /* the step's end: root's ids and groups back */
    if (seteuid(0) < 0 || setegid(0) < 0 || setgroups(1, root_groups) < 0) {
        printf("Bail out! cannot become root again: %s\n", strerror(errno));
        return 1;
    }
    ok(started == 0, "the stand-in daemon starts as a user in %d groups (%s)", NGROUPS,
       started == 0 ? "up" : err.msg);
    char step_dir[sizeof d.dir] = "";
    if (started == 0) {
        snprintf(step_dir, sizeof step_dir, "%s", d.dir);
        mps_stop(&d);
    }
    char want[2048], daemon[4096], client[4096];
    want_groups(want, sizeof want);
    record_of(dir, "daemon", daemon, sizeof daemon);
    record_of(dir, "client", client, sizeof client);
    ok(strcmp(daemon, want) == 0, "the daemon has exactly the user's %d groups (%.60s...)",
       NGROUPS + 1, daemon);
    ok(strcmp(client, want) == 0,
       "its quit client, run at the step's end with root's groups back, has exactly the "
       "user's groups, none of root's (%.60s...)", client[0] ? client : "no record");
    ok(step_dir[0] && access(step_dir, F_OK) < 0 && errno == ENOENT,
       "the step's directory %s is gone", step_dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", dir);
    return tap_done();
}
