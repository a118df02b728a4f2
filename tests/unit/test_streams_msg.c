/* test_streams_msg.c - the stream set's messages (streams_msg.h): a head
 * and a key round trip, keys too long or missing refused, a double's bits
 * round trip, and the lease a set of very many workers uses (its pings
 * within STREAMS_PING_RATE a second). */
#include <string.h>

#include "streams_msg.h"
#include "tap.h"

static void messages(void)
{
    uint8_t b[STREAMS_MSG_MAX];
    char key[STREAMS_KEY_MAX + 1];
    uint64_t head = 0;
    struct cohort_err err;
    uint32_t n = streams_msg_put(b, 42, "cam-07");
    int rc = streams_msg_get(b, n, 1, &head, key, &err);
    ok(rc == 0 && head == 42 && strcmp(key, "cam-07") == 0,
       "a head and a key round trip (%llu, '%s')", (unsigned long long)head, key);
    ok(streams_msg_get(b, n, 0, &head, key, &err) < 0, "a key where none is expected is "
       "refused: %s", err.msg);
    n = streams_msg_put(b, 7, "");
    ok(streams_msg_get(b, n, 1, &head, key, &err) < 0, "a missing key is refused: %s", err.msg);
    ok(streams_f64(streams_f64_bits(0.25)) == 0.25, "a double's bits round trip");
}

static void leases(void)
{
    ok(streams_lease_s(30, 16) == 30, "16 workers keep a lease of 30 s");
    ok(streams_lease_s(30, 100000) == 30, "100,000 workers keep 30 s (a ping each 10 s: "
       "10,000 a second)");
    uint32_t l = streams_lease_s(30, 131072);
    ok(l == 40, "131,072 workers: a lease of %u s (40: pings every 13.3 s, 9,830 a second)", l);
    ok(131072.0 * 3 / l <= STREAMS_PING_RATE, "... within %u pings a second",
       STREAMS_PING_RATE);
    ok(streams_lease_s(60, 131072) == 60, "a longer lease asked for is kept (60 s)");
    ok(streams_lease_s(1, 1048576) == 315, "1,048,576 workers: 315 s (%u)",
       streams_lease_s(1, 1048576));
}

int main(void)
{
    messages();
    leases();
    return tap_done();
}
