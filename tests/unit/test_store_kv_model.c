/* test_store_kv_model.c - a random sequence of queries (SET, DELETE_KEY,
 * ADD, APPEND, COMPARE_SET, WAIT, CANCEL_WAIT, GET, a client or its group
 * gone) over a few keys and clients, each answer of the store (store_kv.h)
 * checked against a model of TCPStore's server, and every wait answered,
 * cancelled or dropped exactly once. */
#include "tap.h"

#include "store_kv_test.h"

/* --- a model of TCPStore's server, checked query by query ------------ */

enum { MK = 4, MC = 6 };

static struct {
    bool set[MK];
    char val[MK][24];
    bool waiting[MC];
    int need[MC][MK]; /* times a wait lists a key not set then */
    int issued, answered, cancelled, dropped;
} m;

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t mid(int c)
{
    return (uint64_t)(1 + c % 2) << 32 | (uint64_t)(c + 1); /* groups 1 and 2 */
}

static const char *mkey(int k)
{
    static const char *const names[MK] = {"k0", "k1", "k2", "k3"};
    return names[k];
}

/* Key k takes v; every wait listing it counts it. */
static void m_set(int k, const char *v)
{
    m.set[k] = true;
    snprintf(m.val[k], sizeof m.val[k], "%s", v);
    for (int c = 0; c < MC; c++) {
        if (!m.waiting[c] || !m.need[c][k])
            continue;
        m.need[c][k] = 0;
        int left = 0;
        for (int j = 0; j < MK; j++)
            left += m.need[c][j];
        if (!left) {
            m.waiting[c] = false;
            m.answered++;
            want_byte(mid(c), TS_STOP_WAITING);
        }
    }
}

static void m_drop(int c, int *count)
{
    *count += m.waiting[c];
    m.waiting[c] = false;
}

/* ADD in the model (its values are short): STORE_FAIL when the value is
 * not a number. */
static int m_add(int c, int k, int64_t d)
{
    const char *v = m.val[k];
    if (m.set[k] && !(v[0] >= '0' && v[0] <= '9') && !(v[0] == '-' && v[1]))
        return STORE_FAIL;
    char text[24];
    snprintf(text, sizeof text, "%lld", (long long)((m.set[k] ? atoll(v) : 0) + d));
    m_set(k, text);
    want_i64(mid(c), atoll(text));
    return STORE_OK;
}

static void m_cas(int c, int k, const char *exp, const char *des)
{
    if (!m.set[k] && exp[0]) {
        want_vec(mid(c), exp, strlen(exp));
        return;
    }
    if (!m.set[k] || strcmp(m.val[k], exp) == 0)
        m_set(k, des);
    want_vec(mid(c), m.val[k], strlen(m.val[k]));
}

static int m_wait(int c)
{
    const char *k[3];
    int n = 1 + (int)(rnd() % 3), left = 0;
    memset(m.need[c], 0, sizeof m.need[c]);
    for (int i = 0; i < n; i++) {
        int j = (int)(rnd() % MK);
        k[i] = mkey(j);
        m.need[c][j] += !m.set[j];
        left += !m.set[j];
    }
    m.issued++;
    m.waiting[c] = left > 0;
    if (!left) {
        m.answered++;
        want_byte(mid(c), TS_STOP_WAITING);
    }
    return keys(mid(c), TS_WAIT, (size_t)n, k);
}

/* One random query (or a client gone) on the store and the model alike:
 * whether the store's result and answers are the model's. */
static bool step(void)
{
    int c = (int)(rnd() % MC), k = (int)(rnd() % MK), op = (int)(rnd() % 12), rc = 0, want_rc = 0;
    char v[24];
    snprintf(v, sizeof v, rnd() % 8 ? "%d" : "x%d", (int)(rnd() % 100) - 50);
    if (m.waiting[c] && op < 8)
        op = 8 + (int)(rnd() % 4); /* a client waiting can only cancel or go */
    switch (op) {
    case 0: case 1:
        rc = kq(mid(c), TS_SET, mkey(k), v);
        m_set(k, v);
        break;
    case 2:
        want_i64(mid(c), m.set[k]);
        m.set[k] = false;
        rc = kq(mid(c), TS_DELETE, mkey(k), NULL);
        break;
    case 3: {
        int64_t d = (int64_t)(rnd() % 11) - 5;
        want_rc = m_add(c, k, d);
        rc = add(mid(c), mkey(k), d);
        break;
    }
    case 4:
        snprintf(v, sizeof v, "%d", (int)(rnd() % 10));
        if (m.set[k] && strlen(m.val[k]) < 12) {
            char joined[48];
            snprintf(joined, sizeof joined, "%s%s", m.val[k], v);
            m_set(k, joined);
        } else if (!m.set[k])
            m_set(k, v);
        else
            break;
        rc = kq(mid(c), TS_APPEND, mkey(k), v);
        break;
    case 5: {
        char exp[24];
        snprintf(exp, sizeof exp, "%s", rnd() % 2 ? m.val[k] : rnd() % 2 ? "" : "x1");
        rc = cas(mid(c), mkey(k), exp, v);
        m_cas(c, k, exp, v);
        break;
    }
    case 6: case 7:
        rc = m_wait(c);
        break;
    case 8:
        m_drop(c, &m.cancelled);
        want_byte(mid(c), TS_WAIT_CANCELED);
        rc = bare(mid(c), TS_CANCEL_WAIT);
        break;
    case 9:
        m_drop(c, &m.dropped);
        store_kv_gone(kv, mid(c));
        break;
    case 10:
        if (rnd() % 4)
            break;
        for (int j = 0; j < MC; j++)
            if (j % 2 == c % 2)
                m_drop(j, &m.dropped);
        store_kv_gone_group(kv, (uint32_t)(1 + c % 2));
        break;
    default:
        if (m.waiting[c])
            break;
        if (m.set[k])
            want_vec(mid(c), m.val[k], strlen(m.val[k]));
        want_rc = m.set[k] ? STORE_OK : STORE_FAIL;
        rc = kq(mid(c), TS_GET, mkey(k), NULL);
        break;
    }
    int64_t n_set = 0;
    for (int j = 0; j < MK; j++)
        n_set += m.set[j];
    return rc == want_rc && answered() && store_kv_size(kv) == n_set;
}

/* store_kv_waiters against the model: bit 1 when the clients listed are
 * not the model's waiting ones, once each; bit 2 when a key listed is not
 * one that client's wait still counts. */
static int waiters_differ(void)
{
    struct seen s = {.n = 0};
    store_kv_waiters(kv, saw, &s);
    int r = 0, n = 0;
    for (int c = 0; c < MC; c++) {
        int times = 0;
        for (size_t i = 0; i < s.n && i < 16; i++) {
            if (s.client[i] != mid(c))
                continue;
            int k = s.key[i][0] == 'k' ? s.key[i][1] - '0' : -1;
            times++;
            r |= k < 0 || k >= MK || !m.need[c][k] || m.set[k] ? 2 : 0;
        }
        r |= times != m.waiting[c];
        n += m.waiting[c];
    }
    return r | (s.n != (size_t)n);
}

static void model(void)
{
    fresh();
    memset(&m, 0, sizeof m);
    int bad = 0, listed = 0, keyed = 0;
    for (int i = 0; i < 50000; i++) {
        if (!step() && bad++ < 5)
            printf("# step %d differs from the model\n", i);
        int w = waiters_differ();
        listed += w & 1;
        keyed += w >> 1;
    }
    ok(bad == 0, "50,000 random queries answered as the model answers (%d differ)", bad);
    ok(listed == 0, "store_kv_waiters lists the model's waiting clients, once each (%d differ)",
       listed);
    ok(keyed == 0, "each with a key its wait still counts, not set (%d differ)", keyed);
    for (int k = 0; k < MK; k++) {
        kq(999, TS_SET, mkey(k), "end");
        m_set(k, "end");
    }
    ok(answered(), "setting every key answers every wait left");
    ok(m.issued > 1000 && m.issued == m.answered + m.cancelled + m.dropped,
       "each of %d waits answered (%d), cancelled (%d) or dropped (%d), once", m.issued,
       m.answered, m.cancelled, m.dropped);
}


int main(void)
{
    model();
    store_kv_free(kv);
    forget(&rec);
    free(rec.a);
    free(want.a);
    return tap_done();
}
