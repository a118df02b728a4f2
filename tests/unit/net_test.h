/* net_test.h - what the connection layer's unit tests share: the step's
 * key they use, and a process of a one-node step of two ranks. Included
 * by tests/unit/test_net_*.c after tap.h. */
#ifndef COHORT_NET_TEST_H
#define COHORT_NET_TEST_H

#include <string.h>

#include "net.h"

static const char *nt_hex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/* s: rank (0 or 1) of job's step of 2 ranks on one node, proving key k. */
TAP_UNUSED static void nt_self(struct hs_self *s, const struct auth_key *k, uint32_t job,
                               uint32_t rank)
{
    static const uint32_t rank_node[] = {0, 0};
    memset(s, 0, sizeof *s);
    s->key = k;
    s->job = job;
    s->rank = rank;
    hs_view(2, 1, rank_node, NULL, 0, s->view);
}

#endif
