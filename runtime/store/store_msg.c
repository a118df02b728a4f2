/* store_msg.c - the frames between a node agent and the store holder (see
 * store_msg.h). */
#include "store_msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "wire.h"

void store_msg_head(uint8_t out[STORE_MSG_HEAD], uint32_t client)
{
    wire_put32(out, client);
}

int store_msg_get(const uint8_t *p, size_t len, uint32_t *client, const uint8_t **rest,
                  size_t *rest_len)
{
    if (len < STORE_MSG_HEAD)
        return -1;
    *client = wire_get32(p);
    *rest = p + STORE_MSG_HEAD;
    *rest_len = len - STORE_MSG_HEAD;
    return 0;
}

int store_msg_send(struct net_conn *c, uint32_t from, uint16_t op, uint32_t client,
                   const void *p1, size_t n1, const void *p2, size_t n2)
{
    uint8_t *b = malloc(STORE_MSG_HEAD + n1 + n2);
    if (!b)
        return -1;
    store_msg_head(b, client);
    if (n1)
        memcpy(b + STORE_MSG_HEAD, p1, n1);
    if (n2)
        memcpy(b + STORE_MSG_HEAD + n1, p2, n2);
    int rc = net_send(c, WIRE_STORE, op, from, b, (uint32_t)(STORE_MSG_HEAD + n1 + n2));
    free(b);
    return rc;
}

uint8_t *store_msg_verdict(uint32_t teller, const char *line, const char *json, size_t *len)
{
    size_t ll = strlen(line) + 1, jl = json ? strlen(json) + 1 : 1;
    uint8_t *p = malloc(4 + ll + jl);
    if (!p)
        return NULL;
    wire_put32(p, teller);
    memcpy(p + 4, line, ll);
    memcpy(p + 4 + ll, json ? json : "", jl);
    *len = 4 + ll + jl;
    return p;
}

void store_msg_status(uint32_t status, char *buf, size_t len)
{
    int st = (int)status;
    if (WIFSIGNALED(st))
        snprintf(buf, len, "killed by signal %d", WTERMSIG(st));
    else
        snprintf(buf, len, "exit code %d", WEXITSTATUS(st));
}
