/* test_tasks_per_node.c - "2(x3),1" count lists. */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "tasks_per_node.h"

static void parses(const char *text, const char *expected)
{
    uint32_t *c, n;
    struct cohort_err err = {0};
    char got[512] = "";
    if (tasks_per_node_parse("V", text, 1000, &c, &n, &err) < 0) {
        ok(0, "'%s' parses (%s)", text, err.msg);
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s%u", i ? "," : "", c[i]);
    ok(strcmp(got, expected) == 0, "'%s' -> %s (got %s)", text, expected, got);
    free(c);
}

static void rejects(const char *text, const char *part)
{
    uint32_t *c = NULL, n;
    struct cohort_err err = {0};
    int rc = tasks_per_node_parse("SLURM_STEP_TASKS_PER_NODE", text, 1000, &c, &n, &err);
    ok(rc < 0 && !c && strstr(err.msg, part), "'%s' rejected: %s", text, err.msg);
}

int main(void)
{
    parses("4", "4");
    parses("2(x3),1", "2,2,2,1");
    parses("1(x2)", "1,1");
    parses("6,1", "6,1");
    parses("7,1(x2)", "7,1,1");
    parses("1(x2),2", "1,1,2");
    rejects("", "empty");
    rejects("2(x3", "malformed");
    rejects("2(3)", "malformed");
    rejects("2(x0)", "malformed");
    rejects("0", "count of 0");
    rejects("a", "malformed");
    rejects("1,", "malformed");
    rejects("-1", "malformed");
    rejects("1(x1001)", "more than 1000");
    rejects("9999999999", "malformed");
    return tap_done();
}
