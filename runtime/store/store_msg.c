/* store_msg.c - the frames between a node agent and the store holder (see
 * store_msg.h). */
#include "store_msg.h"

#include <stdio.h>
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

void store_msg_status(uint32_t status, char *buf, size_t len)
{
    int st = (int)status;
    if (WIFSIGNALED(st))
        snprintf(buf, len, "killed by signal %d", WTERMSIG(st));
    else
        snprintf(buf, len, "exit code %d", WEXITSTATUS(st));
}
