/* test_ports.c - port ranges, reserved ports and the hashed fallback. */
#include <stdio.h>
#include <string.h>

#include "ports.h"
#include "tap.h"

int main(void)
{
    struct port_range r;
    struct cohort_err err = {0};
    uint16_t p[2];
    unsigned n;
    ok(port_range_parse("20000-32767", &r, &err) == 0 && r.lo == 20000 && r.hi == 32767,
       "range parses");
    ok(port_range_parse("32767-20000", &r, &err) < 0 && strstr(err.msg, "A < B"),
       "backwards range rejected: %s", err.msg);
    ok(port_range_parse("80-90", &r, &err) < 0, "privileged range rejected");
    ok(port_range_parse("20000", &r, &err) < 0 && strstr(err.msg, "A-B"), "no dash rejected");
    ok(port_range_parse("20000-70000", &r, &err) < 0, "port above 65535 rejected");

    ok(resv_ports_parse("12000-12003", p, 2, &n, &err) == 0 && n == 2 && p[0] == 12000 &&
           p[1] == 12001,
       "range of reserved ports");
    ok(resv_ports_parse("12005,12002-12003", p, 2, &n, &err) == 0 && n == 2 &&
           p[0] == 12005 && p[1] == 12002,
       "list of reserved ports keeps order");
    ok(resv_ports_parse("12000", p, 2, &n, &err) == 0 && n == 1, "one reserved port");
    ok(resv_ports_parse("12000-11000", p, 2, &n, &err) < 0 &&
           strstr(err.msg, "SLURM_STEP_RESV_PORTS"),
       "bad reserved ports named: %s", err.msg);
    ok(resv_ports_parse("x", p, 2, &n, &err) < 0, "garbage reserved ports rejected");

    struct port_range def = {PORTS_DEFAULT_LO, PORTS_DEFAULT_HI};
    uint16_t m1, b1, m2, b2, m3, b3;
    ports_hashed(4242, 0, def, &m1, &b1);
    ports_hashed(4242, 0, def, &m2, &b2);
    ok(m1 == m2 && b1 == b2, "same job and step give the same ports");
    ok(m1 >= def.lo && m1 <= def.hi && b1 >= def.lo && b1 <= def.hi, "ports inside the range");
    ok(m1 < 32768 || m1 > 60999, "outside Linux's ephemeral range");
    ok(m1 != b1, "master and bootstrap differ");
    int distinct = 1;
    for (uint32_t s = 1; s < 1000; s++) {
        ports_hashed(4242, s, def, &m3, &b3);
        distinct &= m3 != m1 && m3 != b1 && b3 != m1 && b3 != b1;
    }
    ok(distinct, "steps 1..999 of a job never reuse step 0's ports");
    ports_hashed(4243, 0, def, &m3, &b3);
    ok(m3 != m1, "another job gets another port");
    ports_hashed(7, 0xfffffffbu, def, &m3, &b3); /* the batch step's id */
    ok(m3 >= def.lo && m3 <= def.hi, "batch step id stays in range");
    /* keyed by the secret: the same in every task, another for another secret */
    const char *sa = "5f3c9a0e", *sb = "5f3c9a0f";
    uint16_t ka = ports_keyed(4242, 0, sa, def, m1);
    ok(ka == ports_keyed(4242, 0, sa, def, m1), "same secret gives the same bootstrap port");
    ok(ka != ports_keyed(4242, 0, sb, def, m1), "another secret another port (%u)", ka);
    int inside = 1, seen = 0;
    static unsigned char hit[65536];
    for (unsigned i = 0; i < 2000; i++) {
        char sec[16];
        snprintf(sec, sizeof sec, "s%u", i);
        uint16_t k = ports_keyed(4242, 0, sec, def, m1);
        inside &= k >= def.lo && k <= def.hi && k != m1;
        seen += !hit[k];
        hit[k] = 1;
    }
    ok(inside, "keyed ports inside the range, never MASTER_PORT");
    ok(seen > 1800, "2000 secrets spread over the range (%d distinct ports)", seen);
    struct port_range two = {30000, 30001};
    ok(ports_keyed(1, 0, sa, two, 30000) == 30001 && ports_keyed(1, 0, sa, two, 30001) == 30000 &&
           ports_keyed(1, 0, sb, two, 30001) == 30000,
       "a range of two: the port that is not MASTER_PORT");
    uint16_t v;
    ok(port_parse("MASTER_PORT", "29500", &v, &err) == 0 && v == 29500, "port parses");
    ok(port_parse("MASTER_PORT", "29500x", &v, &err) < 0 && strstr(err.msg, "MASTER_PORT"),
       "bad port named: %s", err.msg);
    ok(port_parse("MASTER_PORT", "0", &v, &err) < 0, "port 0 rejected");
    return tap_done();
}
