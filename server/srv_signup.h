/* nq-server: sign-ups -- volunteers who join without the operator (nq-client --join; docs/protocol.md
 * "signup", docs/operations.md "Running a public project").
 *
 * A `signup` frame comes instead of hello. With --signup open the server makes an owner (marked
 * self-joined, with a fresh enrolment key) and this machine's client at once and answers `joined`
 * with both secrets; the client then says hello with its token on the same connection. With
 * --signup approve the request waits (a row in the store, state pending) for `nq-admin owner
 * approve|reject`; the client is given a ticket and asks again with it every --signup-poll
 * seconds until it is approved (then joined as above) or rejected (signup_rejected, fatal).
 *
 * Bounds, each refusal a fatal error frame that says when to come back (`rate_limited` with
 * retry_after; the message names the time): --signup-per-addr admitted sign-ups per address
 * (IPv4; IPv6 /64) and hour, --signup-per-net per network (IPv4 /24; IPv6 /48) and hour,
 * --signup-per-day in all, and --signup-pending requests waiting at once (approve; approved
 * requests whose client has not come back yet count too). Only
 * admitted sign-ups are stored (a refusal costs one indexed count), and rows no limit counts any
 * more are pruned, so the table holds at most about two days of admitted sign-ups plus the
 * pending ones. --max-clients bounds the clients sign-ups make, as for enrolment.
 */
#ifndef SRV_SIGNUP_H
#define SRV_SIGNUP_H

#include <stdint.h>

typedef struct srv_s srv_t;
struct srv_req_s;

/* Handle a `signup` request of a connection that has not said hello (srv_proto.c dispatches). */
void srv_signup_handle(srv_t *s, struct srv_req_s *r, int64_t now);

#endif
