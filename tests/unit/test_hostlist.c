/* test_hostlist.c - the hostlist grammar: every case of the field notes,
 * the errors, indexing without expansion, and the limits. */
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "tap.h"

/* Expands expr and compares with the space-separated expected hosts. */
static void expands(const char *expr, const char *expected)
{
    struct hostlist *hl;
    struct cohort_err err = {0};
    char got[8192] = "", host[HOSTLIST_MAX_NAME + 1];
    if (hostlist_parse(expr, &hl, &err) < 0) {
        ok(0, "'%s' parses (error: %s)", expr, err.msg);
        return;
    }
    for (uint64_t i = 0; i < hostlist_count(hl); i++) {
        hostlist_nth(hl, i, host, sizeof host);
        strcat(strcat(got, i ? " " : ""), host);
    }
    ok(strcmp(got, expected) == 0, "'%s' -> '%s' (got '%s')", expr, expected, got);
    hostlist_free(hl);
}

/* expr must be rejected with a message containing part. */
static void rejects(const char *expr, const char *part)
{
    struct hostlist *hl = NULL;
    struct cohort_err err = {0};
    int rc = hostlist_parse(expr, &hl, &err);
    ok(rc < 0 && hl == NULL && strstr(err.msg, part) != NULL,
       "'%s' rejected naming '%s' (message: %s)", expr, part, err.msg);
    hostlist_free(hl);
}

int main(void)
{
    /* ../shared/FIELD-NOTES.md, "Hostlist grammar" */
    expands("n[1-2]x[3-4]", "n1x3 n1x4 n2x3 n2x4");
    expands("n[009-11]", "n009 n010 n011");
    expands("n[09-011]", "n09 n10 n11");
    expands("n[1,3,1]", "n1 n3 n1");
    expands("[1-2][4-5]", "14 15 24 25");
    expands("rack[1-2]_node[01-03]",
            "rack1_node01 rack1_node02 rack1_node03 rack2_node01 rack2_node02 rack2_node03");
    expands("n[1-3]-[4-5]", "n1-4 n1-5 n2-4 n2-5 n3-4 n3-5");
    expands("a,b,,c", "a b c");
    expands("a b\tc\nd", "a b c d");
    expands("n[1-2],m", "n1 n2 m");
    expands("n[1-]", "n1"); /* as Slurm reads it */
    expands("node[0001-0003]-int", "node0001-int node0002-int node0003-int");
    expands("login[1-2]-ib", "login1-ib login2-ib");
    expands("x[1-2]y", "x1y x2y");
    expands("n[2,1-3]", "n2 n1 n2 n3");
    expands("n-[1-2]", "n-1 n-2");
    expands("n[007]", "n007");
    /* Slurm's order for three groups: last fastest, then first, then second. */
    expands("n[1-2]x[1-3]y[1-2]",
            "n1x1y1 n1x1y2 n2x1y1 n2x1y2 n1x2y1 n1x2y2 n2x2y1 n2x2y2 n1x3y1 n1x3y2 "
            "n2x3y1 n2x3y2");
    expands("", "");
    expands(" , ", "");

    rejects("n[3-1]", "backwards");
    rejects("n[]", "empty brackets");
    rejects("n[x]", "[x]");
    rejects("n[1,]", "ends with ','");
    rejects("n[,1]", "[,1]");
    rejects("n[-1]", "[-1]");
    rejects("n[1--3]", "[1--3]");
    rejects("n[1", "without matching");
    rejects("n1]", "without '['");
    rejects("n[[1]]", "nested");
    rejects("n[1 ,2]", "whitespace");
    rejects("n[1-65537]", "more than 65536");
    rejects("n[1-9999999999]", "more than 65536");
    rejects("n[99999999999999999999]", "[99999999999999999999]");
    rejects("n[1-65536]x[1-65536]", "more than");

    /* Limits and indexing without expansion. */
    struct hostlist *hl;
    struct cohort_err err;
    char host[HOSTLIST_MAX_NAME + 1];
    ok(hostlist_parse("n[1-65536],m[00001-65536]", &hl, &err) == 0, "two full ranges parse");
    ok(hostlist_count(hl) == 131072, "count is 131072");
    ok(hostlist_nth(hl, 65535, host, sizeof host) == 0 && strcmp(host, "n65536") == 0,
       "host 65535 is n65536 (%s)", host);
    ok(hostlist_nth(hl, 65536, host, sizeof host) == 0 && strcmp(host, "m00001") == 0,
       "host 65536 is m00001 (%s)", host);
    ok(hostlist_nth(hl, 131072, host, sizeof host) < 0, "host 131072 is out of range");
    ok(hostlist_find(hl, "m00002") == 65537, "find m00002");
    ok(hostlist_find(hl, "m2") == -1, "m2 is not m00002");
    hostlist_free(hl);

    char big[400];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    rejects(big, "longer than 255");
    return tap_done();
}
