/* coord_service.c - what the coordinator's services share (coord_service.h):
 * the admit of a service whose ranks come through the node relays. */
#include "coord_service.h"

#include "peers.h"

enum net_admit coord_service_admit_relays(void *svc, const struct hs_hello *h, bool via_unix,
                                          struct cohort_err *why)
{
    struct peers *const *peers = svc; /* It is the service's first member. */
    return peers_admit(*peers, h, via_unix, why);
}
