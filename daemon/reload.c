/*
 * reload.c — live reload (see reload.h for what changes live and why).
 *
 * DESIGN.  The running configuration d->cfg stays the source of truth for
 * what runs: a reload builds an "effective" copy of it and moves into it
 * only the keys it has applied, so keys that need a restart keep their
 * running values (and are reported again by every later reload until the
 * restart happens).  Steps, fallible ones first so a failure leaves
 * everything as it was:
 *
 *   1. load + validate the file (errors → log, result="error", stop)
 *   2. list what needs a restart: gi_config_restart_needed() on the new
 *      config with the parts this module applies itself masked out
 *   3. streams (host executor only): build a new stream table and lookup
 *      map here, on the main thread — unchanged streams keep their frame
 *      ring, new or re-shaped ones get a new one — add rte_flow rules for
 *      new UDP ports, then hand the table to the executor through its
 *      mailbox (gi_executor_swap_streams: taken between batches, carried
 *      streams keep state and counters, removed ones are flushed), then
 *      close removed rings and drop stale rules
 *   4. stats listeners: stop, start with the new keys, or the old ones back
 *   5. log level, status interval, batch limits (cannot fail)
 *   6. swap d->cfg (and the stream table) under the stats lock, so HTTP and
 *      telemetry snapshots never see half of it
 *
 * Main thread only.  The data path never waits on this module: rx lcores
 * read the batch limits with relaxed loads once per burst, the executor
 * checks its mailbox between batches.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "daemon.h"
#include "kernels/frame.h"
#include "lifecycle.h"
#include "notify.h"
#include "reload.h"
#include "stats.h"

#define SWAP_TIMEOUT_NS 2000000000ull /* the executor reaches a safe point within a batch */

/* ---- messages: the loader writes to a FILE, the reload logs lines ---- */

struct msgbuf {
	char *text;
	size_t len;
	FILE *f;
};

static FILE *msg_open(struct msgbuf *m)
{
	memset(m, 0, sizeof(*m));
	m->f = open_memstream(&m->text, &m->len);
	return m->f;
}

/* Log every line written to m with `level`, then free it. */
static void msg_flush(struct msgbuf *m, enum gi_log_level level)
{
	if (m->f)
		fclose(m->f);
	for (char *line = m->text, *nl; line && *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		gi_log(level, "reload: %s", line);
		if (!nl)
			break;
	}
	free(m->text);
	memset(m, 0, sizeof(*m));
}

/* ---- streams ---------------------------------------------------------- */

/* The same tensor: block (its resolved values): the ring's slots and header depend on it. */
static bool same_tensor(const struct gi_cfg_tensor *a, const struct gi_cfg_tensor *b)
{
	if (a->given != b->given)
		return false;
	return !a->given ||
	       (a->sample == b->sample && a->big == b->big && a->n_shape == b->n_shape &&
		memcmp(a->shape, b->shape, sizeof(a->shape)) == 0 && a->dtype == b->dtype && a->missing == b->missing &&
		a->scale_v == b->scale_v && a->offset_v == b->offset_v);
}

/*
 * Can stream b take over a's state and frame ring?  Everything that shapes
 * the ring or the meaning of its frame numbers must be equal; the window,
 * timeout, resync limit and queue may change.
 */
static bool stream_same_ring(const struct gi_cfg_stream *a, const struct gi_cfg_stream *b)
{
	return strcmp(a->port, b->port) == 0 && a->udp_dst_port == b->udp_dst_port && a->format == b->format &&
	       a->frame_packets == b->frame_packets && a->payload_bytes == b->payload_bytes &&
	       a->frame_bytes == b->frame_bytes &&
	       a->ring_slots == b->ring_slots && strcmp(a->shm, b->shm) == 0 &&
	       a->vita49_stream_id == b->vita49_stream_id && a->vita49.given == b->vita49.given &&
	       a->vita49.ts_step_ps == b->vita49.ts_step_ps && a->custom.given == b->custom.given &&
	       memcmp(&a->custom.map, &b->custom.map, sizeof(a->custom.map)) == 0 &&
	       a->rocev2_dst_qp == b->rocev2_dst_qp && a->rocev2.given == b->rocev2.given &&
	       a->rocev2.base_va == b->rocev2.base_va && a->rocev2.icrc == b->rocev2.icrc &&
	       a->rocev2.close_on == b->rocev2.close_on && a->rocev2.placement == b->rocev2.placement &&
	       a->rocev2.page_bytes == b->rocev2.page_bytes && a->rocev2.pages == b->rocev2.pages &&
	       a->rocev2.rkey == b->rocev2.rkey && a->rocev2.profile == b->rocev2.profile &&
	       a->rocev2.frame_end == b->rocev2.frame_end && a->rocev2.psn_bits == b->rocev2.psn_bits &&
	       a->rocev2.frame_crc == b->rocev2.frame_crc && same_tensor(&a->tensor, &b->tensor);
}

static bool stream_same_live(const struct gi_cfg_stream *a, const struct gi_cfg_stream *b)
{
	return a->reorder_window == b->reorder_window && a->frame_timeout_ms == b->frame_timeout_ms &&
	       a->resync_frames == b->resync_frames && a->queue == b->queue;
}

static int find_port(const struct gi_config *c, const char *name)
{
	for (uint32_t p = 0; p < c->n_ports; p++)
		if (strcmp(c->ports[p].name, name) == 0)
			return (int)p;
	return -1;
}

/* What a stream change turns into; heap-allocated (the arrays are large). */
struct stream_plan {
	uint32_t n_old, n_new;
	int32_t carry[GI_MAX_STREAMS]; /* new j → old index it continues, or -1 */
	int32_t fate[GI_MAX_STREAMS];  /* old i → new index, or -1: removed or re-shaped */
	bool name_reused[GI_MAX_STREAMS]; /* old i's shm name now belongs to a new ring: do not unlink it */
	bool created[GI_MAX_STREAMS];  /* new j got a new frame ring */
	struct gi_cfg_stream cfg[GI_MAX_STREAMS]; /* port_index resolved against the running ports */
	struct gi_stream_rt *streams;
	uint16_t *map;
	struct gi_frame_store store[GI_MAX_STREAMS];
	struct gi_flow_rule added[GI_MAX_PORTS][GI_FLOW_MAX_RULES]; /* rules made before the swap */
	unsigned n_added[GI_MAX_PORTS];
};

static void plan_match(struct stream_plan *pl, const struct gi_config *cur, const struct gi_config *next)
{
	pl->n_old = cur->n_streams;
	pl->n_new = next->n_streams;
	for (uint32_t i = 0; i < pl->n_old; i++)
		pl->fate[i] = -1;
	for (uint32_t j = 0; j < pl->n_new; j++) {
		pl->carry[j] = -1;
		pl->cfg[j] = next->streams[j];
		pl->cfg[j].port_index = find_port(cur, next->streams[j].port);
		for (uint32_t i = 0; i < pl->n_old; i++)
			if (strcmp(cur->streams[i].name, next->streams[j].name) == 0 &&
			    stream_same_ring(&cur->streams[i], &next->streams[j])) {
				pl->carry[j] = (int32_t)i;
				pl->fate[i] = (int32_t)j;
			}
	}
}

static bool plan_is_noop(const struct stream_plan *pl, const struct gi_config *cur)
{
	if (pl->n_old != pl->n_new)
		return false;
	for (uint32_t j = 0; j < pl->n_new; j++)
		if (pl->carry[j] != (int32_t)j || !stream_same_live(&cur->streams[j], &pl->cfg[j]))
			return false;
	return true;
}

/* Streams may only use what runs: their port and queue must exist now. */
static unsigned plan_check_ports(const struct stream_plan *pl, const struct gi_config *cur)
{
	unsigned n = 0;
	for (uint32_t j = 0; j < pl->n_new; j++) {
		const struct gi_cfg_stream *cs = &pl->cfg[j];
		if (cs->port_index < 0) {
			gi_log(GI_LOG_WARNING, "reload: streams[%u] (%s): port %s is not running (needs a restart)", j,
			       cs->name, cs->port);
			n++;
		} else if (cs->queue >= cur->ports[cs->port_index].n_queues) {
			gi_log(GI_LOG_WARNING,
			       "reload: streams[%u] (%s): port %s runs %u rx queue%s, queue %u needs a restart", j,
			       cs->name, cs->port, cur->ports[cs->port_index].n_queues,
			       cur->ports[cs->port_index].n_queues == 1 ? "" : "s", cs->queue);
			n++;
		}
	}
	return n;
}

/* A new frame ring for new stream j, made as at start-up. */
static int plan_ring_create(struct gi_daemon *d, struct stream_plan *pl, uint32_t j, uint64_t created_ns)
{
	const struct gi_cfg_stream *cs = &pl->cfg[j];

	/* a removed or re-shaped stream's name: its consumers keep the old
	 * object until it is closed; new ones find the new ring */
	for (uint32_t i = 0; i < pl->n_old; i++)
		if (pl->fate[i] < 0 && !pl->name_reused[i] && strcmp(d->store[i].shm.name, cs->shm) == 0) {
			gi_shm_unlink(&d->store[i].shm);
			pl->name_reused[i] = true;
		}
	int rc = gi_daemon_ring_open(d, cs, j, created_ns, &pl->store[j], &pl->streams[j]);
	if (rc < 0)
		return rc;
	pl->created[j] = true;
	return 0;
}

/* Undo what plan_build() made: new rings and rules added before the swap. */
static void plan_abort(struct gi_daemon *d, struct stream_plan *pl)
{
	for (uint32_t p = 0; p < d->n_ports; p++)
		for (unsigned r = 0; r < pl->n_added[p]; r++)
			gi_flow_rule_del(&d->ports[p].flows, pl->added[p][r].udp_dst_port);
	for (uint32_t j = 0; j < pl->n_new; j++)
		if (pl->created[j])
			gi_daemon_ring_close(d, &pl->store[j], true);
	free(pl->streams);
	free(pl->map);
}

/* Does any stream of `c` on port p use UDP port udp (so it has a rule)? */
static int rule_queue(const struct gi_cfg_stream *s, uint32_t n, int port, uint16_t udp)
{
	for (uint32_t i = 0; i < n; i++)
		if (s[i].port_index == port && s[i].udp_dst_port == udp)
			return (int)s[i].queue;
	return -1;
}

static int plan_build(struct gi_daemon *d, struct stream_plan *pl)
{
	const struct gi_config *cur = &d->cfg;
	size_t map_len = (size_t)cur->n_ports * 65536u;
	struct timespec rt;
	int rc;

	clock_gettime(CLOCK_REALTIME, &rt);
	pl->streams = calloc(pl->n_new ? pl->n_new : 1, sizeof(*pl->streams));
	pl->map = malloc(map_len * sizeof(*pl->map));
	if (!pl->streams || !pl->map) {
		gi_log(GI_LOG_ERR, "reload: streams: out of memory");
		plan_abort(d, pl);
		return -ENOMEM;
	}
	for (size_t k = 0; k < map_len; k++)
		pl->map[k] = GI_STREAM_NONE;
	for (uint32_t j = 0; j < pl->n_new; j++) {
		const struct gi_cfg_stream *cs = &pl->cfg[j];
		struct gi_stream_rt *st = &pl->streams[j];
		int32_t i = pl->carry[j];

		gi_stream_rt_configure(st, cs);
		if (i >= 0) {
			st->ring = d->streams[i].ring; /* the executor copies the rest from the running stream */
			st->mirror = d->streams[i].mirror;
			pl->store[j] = d->store[i];
		} else {
			rc = plan_ring_create(d, pl, j, (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec);
			if (rc < 0) {
				plan_abort(d, pl);
				return rc;
			}
		}
		uint16_t *head = &pl->map[(size_t)cs->port_index * 65536u + cs->udp_dst_port];
		st->next_same_udp = *head;
		*head = (uint16_t)j;
	}
	/* rules for UDP ports no running stream has: before the swap, so the new
	 * stream's first packets already reach its queue */
	for (uint32_t j = 0; j < pl->n_new; j++) {
		const struct gi_cfg_stream *cs = &pl->cfg[j];
		int p = cs->port_index;
		if (rule_queue(cur->streams, cur->n_streams, p, cs->udp_dst_port) >= 0 ||
		    rule_queue(pl->cfg, j, p, cs->udp_dst_port) >= 0)
			continue;
		struct gi_flow_rule r = { .udp_dst_port = cs->udp_dst_port, .queue = (uint16_t)cs->queue,
					  .stream = cs->name };
		rc = gi_flow_rule_add(&d->ports[p].flows, &r);
		if (rc < 0) {
			plan_abort(d, pl);
			return rc;
		}
		pl->added[p][pl->n_added[p]++] = r;
	}
	return 0;
}

/* After the swap: rules of UDP ports nobody uses any more, and moved queues. */
static unsigned plan_fix_rules(struct gi_daemon *d, const struct stream_plan *pl, const struct gi_config *cur)
{
	unsigned failed = 0;

	for (uint32_t i = 0; i < cur->n_streams; i++) {
		const struct gi_cfg_stream *os = &cur->streams[i];
		int p = os->port_index;
		if (rule_queue(cur->streams, i, p, os->udp_dst_port) >= 0)
			continue; /* handled at its first stream */
		int q = rule_queue(pl->cfg, pl->n_new, p, os->udp_dst_port);
		if (q == (int)os->queue)
			continue;
		if (gi_flow_rule_del(&d->ports[p].flows, os->udp_dst_port) < 0)
			failed++;
		if (q < 0)
			continue;
		struct gi_flow_rule r = { .udp_dst_port = os->udp_dst_port, .queue = (uint16_t)q, .stream = os->name };
		if (gi_flow_rule_add(&d->ports[p].flows, &r) < 0)
			failed++;
	}
	return failed;
}

static void plan_log(const struct stream_plan *pl, const struct gi_config *cur)
{
	for (uint32_t j = 0; j < pl->n_new; j++) {
		const struct gi_cfg_stream *cs = &pl->cfg[j];
		int32_t i = pl->carry[j];
		if (i >= 0) {
			const struct gi_cfg_stream *os = &cur->streams[i];
			if (stream_same_live(os, cs))
				continue;
			/* only what changed */
			char what[256];
			size_t n = 0;
#define CHANGED(field)                                                                                     \
	if (os->field != cs->field)                                                                            \
		n += (size_t)snprintf(what + n, sizeof(what) - GI_MIN(n, sizeof(what)), "%s" #field " %u -> %u", \
				      n ? ", " : "", (unsigned)os->field, (unsigned)cs->field)
			CHANGED(reorder_window);
			CHANGED(frame_timeout_ms);
			CHANGED(resync_frames);
			CHANGED(queue);
#undef CHANGED
			gi_log(GI_LOG_NOTICE, "reload: stream %s: %s (state and frame ring kept)", cs->name, what);
			continue;
		}
		bool reshaped = false;
		for (uint32_t k = 0; k < pl->n_old; k++)
			reshaped |= strcmp(cur->streams[k].name, cs->name) == 0;
		gi_log(GI_LOG_NOTICE, "reload: stream %s %s: port %s queue %u udp %u, %u x %u-byte packets per frame, "
		       "%u slots in %s (new frame ring)",
		       cs->name, reshaped ? "changed shape or match" : "added", cs->port, cs->queue, cs->udp_dst_port,
		       cs->frame_packets, cs->payload_bytes, cs->ring_slots, cs->shm);
	}
	for (uint32_t i = 0; i < pl->n_old; i++)
		if (pl->fate[i] < 0)
			gi_log(GI_LOG_NOTICE, "reload: stream %s: old frame ring %s closed (open frames published as partial)",
			       cur->streams[i].name, cur->streams[i].shm);
}

/*
 * Step 3.  Returns 0 (nothing to do, or applied: `eff` holds the new
 * streams), 1 when the change needs a restart (reported, nothing done), or
 * -errno (nothing done).
 */
static int apply_streams(struct gi_daemon *d, const struct gi_config *next, struct gi_config *eff, bool *changed)
{
	const struct gi_config *cur = &d->cfg;
	struct stream_plan *pl = calloc(1, sizeof(*pl));
	int rc;

	*changed = false;
	if (!pl) {
		gi_log(GI_LOG_ERR, "reload: streams: out of memory");
		return -ENOMEM;
	}
	plan_match(pl, cur, next);
	if (plan_is_noop(pl, cur)) {
		free(pl);
		return 0;
	}
	if (!gi_executor_can_swap_streams(d->exec)) {
		gi_log(GI_LOG_WARNING,
		       "reload: streams: changed, but executor %s keeps stream state on the GPU, where it cannot be "
		       "swapped safely: stream changes need a restart (streams left as they are)",
		       d->backend);
		free(pl);
		return 1;
	}
	if (plan_check_ports(pl, cur)) {
		gi_log(GI_LOG_WARNING, "reload: streams left as they are");
		free(pl);
		return 1;
	}
	rc = plan_build(d, pl);
	if (rc < 0) {
		gi_log(GI_LOG_ERR, "reload: streams: %s; streams left as they are", strerror(-rc));
		free(pl);
		return rc;
	}
	struct gi_exec_ctx next_ctx = { .n_streams = pl->n_new, .n_ports = cur->n_ports, .streams = pl->streams,
					.map = pl->map };
	rc = gi_executor_swap_streams(d->exec, &next_ctx, pl->carry, SWAP_TIMEOUT_NS);
	if (rc < 0) {
		gi_log(GI_LOG_ERR, "reload: streams: executor %s did not take the new stream table: %s; streams left "
		       "as they are", d->backend, rc == -ETIMEDOUT ? "no safe point within 2 s" : strerror(-rc));
		plan_abort(d, pl);
		free(pl);
		return rc;
	}
	/* the executor runs on the new table; the old one is ours again */
	plan_log(pl, cur);
	unsigned rule_failures = plan_fix_rules(d, pl, cur);
	struct gi_stream_rt *old_streams = d->streams;
	uint16_t *old_map = d->stream_map;
	struct gi_frame_store *old_store = malloc(sizeof(d->store));
	if (!old_store) { /* the executor already runs on the new table: the swap must happen anyway */
		gi_log(GI_LOG_ERR, "reload: out of memory while retiring frame rings; the retired ones stay open and "
		       "named until the daemon exits");
	} else {
		memcpy(old_store, d->store, sizeof(d->store));
	}

	gi_stats_lock();
	d->streams = pl->streams;
	d->stream_map = pl->map;
	memcpy(d->store, pl->store, sizeof(d->store));
	memcpy(eff->streams, pl->cfg, sizeof(eff->streams));
	eff->n_streams = pl->n_new;
	d->cfg.n_streams = pl->n_new; /* d->cfg.streams follows with eff in commit(); snapshots read both */
	memcpy(d->cfg.streams, pl->cfg, sizeof(d->cfg.streams));
	gi_stats_unlock();

	for (uint32_t i = 0; i < pl->n_old; i++) {
		if (pl->fate[i] >= 0)
			continue;
		const struct gi_stream_counters *c = &old_streams[i].c; /* final: the executor has let go */
		d->retired.packets += c->packets;
		d->retired.metadata += c->metadata;
		d->retired.duplicates += c->duplicates;
		d->retired.late += c->late;
		if (old_store) /* consumers drain and leave */
			gi_daemon_ring_close(d, &old_store[i], !pl->name_reused[i]);
	}
	free(old_store);
	free(old_streams);
	free(old_map);
	free(pl);
	*changed = true;
	if (rule_failures) {
		gi_log(GI_LOG_ERR, "reload: %u rte_flow rule change%s failed (logged above): packets of those UDP ports "
		       "may arrive on another queue or not at all; fix and reload, or restart", rule_failures,
		       rule_failures == 1 ? "" : "s");
		return -EIO;
	}
	return 0;
}

/* ---- stats listeners --------------------------------------------------- */

static int apply_stats_listeners(struct gi_daemon *d, const struct gi_config *next, struct gi_config *eff,
				 bool *changed)
{
	const struct gi_cfg_stats *o = &d->cfg.stats, *n = &next->stats;
	struct gi_cfg_stats keep = *o;
	int rc;

	*changed = false;
	if (strcmp(o->unix_path, n->unix_path) == 0 && strcmp(o->listen, n->listen) == 0)
		return 0;
	if (d->http) {
		gi_http_stop(d->http);
		d->http = NULL;
	}
	memcpy(d->cfg.stats.unix_path, n->unix_path, sizeof(n->unix_path));
	memcpy(d->cfg.stats.listen, n->listen, sizeof(n->listen));
	rc = gi_daemon_stats_start(d);
	if (rc == 0) {
		gi_log(GI_LOG_NOTICE, "reload: stats listeners now unix '%s', listen '%s' (were '%s', '%s')",
		       n->unix_path, n->listen, keep.unix_path, keep.listen);
		memcpy(eff->stats.unix_path, n->unix_path, sizeof(n->unix_path));
		memcpy(eff->stats.listen, n->listen, sizeof(n->listen));
		*changed = true;
		return 0;
	}
	d->cfg.stats = keep;
	int rc2 = gi_daemon_stats_start(d);
	gi_log(GI_LOG_ERR, "reload: stats listeners unix '%s', listen '%s' could not start: %s; %s", n->unix_path,
	       n->listen, strerror(-rc),
	       rc2 == 0 ? "kept the previous ones" : "the previous ones could not restart either: no metrics endpoint");
	return rc;
}

/* ---- the reload --------------------------------------------------------- */

/*
 * The new config with what this module applies itself replaced by the
 * running values, so gi_config_restart_needed() lists exactly the rest:
 * streams (compared by name here, not by index), stats listeners.
 */
static void mask_live(struct gi_config *probe, const struct gi_config *cur)
{
	probe->n_streams = cur->n_streams;
	memcpy(probe->streams, cur->streams, sizeof(probe->streams));
	memcpy(probe->stats.unix_path, cur->stats.unix_path, sizeof(probe->stats.unix_path));
	memcpy(probe->stats.listen, cur->stats.listen, sizeof(probe->stats.listen));
}

/* Step 5: per-queue batch limits.  Returns how many need a restart. */
static unsigned apply_batches(struct gi_daemon *d, const struct gi_config *next, struct gi_config *eff,
			      unsigned *live)
{
	unsigned restart = 0;
	uint32_t k = 0;

	for (uint32_t p = 0; p < d->cfg.n_ports; p++) {
		const struct gi_cfg_port *cp = &d->cfg.ports[p];
		const struct gi_cfg_port *np = p < next->n_ports ? &next->ports[p] : NULL;
		bool same_port = np && strcmp(np->name, cp->name) == 0 && np->n_queues == cp->n_queues;
		for (uint32_t q = 0; q < cp->n_queues; q++, k++) {
			if (!same_port)
				continue; /* reported by gi_config_restart_needed() */
			const struct gi_cfg_batch *ob = &cp->queues[q].batch, *nb = &np->queues[q].batch;
			struct gi_rxq *rxq = &d->rxq[k];
			uint32_t max = nb->max_packets;
			if (ob->max_packets == nb->max_packets && ob->timeout_us == nb->timeout_us)
				continue;
			if (max > rxq->max_pkts) {
				gi_log(GI_LOG_WARNING,
				       "reload: %s: ports[%u].rx_queues[%u].batch.max_packets: changed from %u to %u, above "
				       "the batch ring's %u-packet slots fixed at start (needs a restart); keeping %u",
				       next->path, p, q, ob->max_packets, max, rxq->max_pkts, ob->max_packets);
				restart++;
				max = ob->max_packets;
			}
			if (max == ob->max_packets && ob->timeout_us == nb->timeout_us)
				continue;
			gi_rxq_set_batch(rxq, max, nb->timeout_us); /* in range: checked above */
			eff->ports[p].queues[q].batch.max_packets = max;
			eff->ports[p].queues[q].batch.timeout_us = nb->timeout_us;
			if (max != ob->max_packets && ob->timeout_us != nb->timeout_us)
				gi_log(GI_LOG_NOTICE, "reload: port %s queue %u: batch max_packets %u -> %u, timeout_us %u -> %u",
				       cp->name, q, ob->max_packets, max, ob->timeout_us, nb->timeout_us);
			else if (max != ob->max_packets)
				gi_log(GI_LOG_NOTICE, "reload: port %s queue %u: batch max_packets %u -> %u", cp->name, q,
				       ob->max_packets, max);
			else
				gi_log(GI_LOG_NOTICE, "reload: port %s queue %u: batch timeout_us %u -> %u", cp->name, q,
				       ob->timeout_us, nb->timeout_us);
			(*live)++;
		}
	}
	return restart;
}

static int reload_failed(struct gi_daemon *d, int rc, const char *status)
{
	gi_stats_lock();
	d->reloads_error++;
	gi_stats_unlock();
	gi_notify_reloaded(false, status);
	return rc;
}

int gi_reload(struct gi_daemon *d)
{
	struct gi_config *next = calloc(1, sizeof(*next));
	struct gi_config *probe = malloc(sizeof(*probe));
	struct gi_config *eff = malloc(sizeof(*eff));
	struct msgbuf m;
	unsigned n_errors = 0, restart = 0, live = 0;
	char status[GI_PATH_MAX + 128];
	bool changed;
	int rc;

	gi_notify_reloading();
	gi_log(GI_LOG_NOTICE, "reload: reading %s", d->cfg.path);
	if (!next || !probe || !eff) {
		free(next);
		free(probe);
		free(eff);
		gi_log(GI_LOG_ERR, "reload: out of memory; keeping the running configuration");
		return reload_failed(d, -ENOMEM, "configuration reload failed: out of memory; running the previous one");
	}
	msg_open(&m);
	rc = gi_config_load(d->cfg.path, next, m.f, &n_errors);
	msg_flush(&m, GI_LOG_ERR);
	if (rc < 0) {
		if (rc == -EINVAL)
			gi_log(GI_LOG_ERR, "reload: %s: %u error%s; keeping the running configuration, nothing changed",
			       d->cfg.path, n_errors, n_errors == 1 ? "" : "s");
		else
			gi_log(GI_LOG_ERR, "reload: %s: %s; keeping the running configuration, nothing changed",
			       d->cfg.path, strerror(-rc));
		snprintf(status, sizeof(status), "configuration reload failed (%u error%s in %s); running the previous one",
			 n_errors, n_errors == 1 ? "" : "s", d->cfg.path);
		gi_config_free(next);
		free(next);
		free(probe);
		free(eff);
		return reload_failed(d, rc, status);
	}

	/* 2: what needs a restart, by key */
	*probe = *next; /* shares next's owned strings: never freed itself */
	mask_live(probe, &d->cfg);
	msg_open(&m);
	restart += gi_config_restart_needed(&d->cfg, probe, m.f);
	msg_flush(&m, GI_LOG_WARNING);
	*eff = d->cfg; /* shares the running config's owned strings */

	/* 3: streams — fallible, so first; on failure nothing has changed */
	rc = apply_streams(d, next, eff, &changed);
	if (rc == 1) {
		restart++;
		rc = 0;
	}
	if (rc < 0 && !changed) {
		gi_config_free(next);
		free(next);
		free(probe);
		free(eff);
		return reload_failed(d, rc, "configuration reload failed: streams could not change; running the "
					    "previous configuration");
	}
	live += changed;
	int failed = rc;

	/* 4: stats listeners (the old ones come back if the new ones fail) */
	rc = apply_stats_listeners(d, next, eff, &changed);
	live += changed;
	if (rc < 0)
		failed = rc;

	/* 5: cannot fail */
	restart += apply_batches(d, next, eff, &live);
	if (next->log_level != d->cfg.log_level) {
		gi_log(GI_LOG_NOTICE, "reload: log.level %s -> %s", gi_log_level_name(d->cfg.log_level),
		       gi_log_level_name(next->log_level));
		gi_log_set_level(next->log_level);
		eff->log_level = next->log_level;
		live++;
	}
	if (next->stats.status_interval_ms != d->cfg.stats.status_interval_ms) {
		gi_log(GI_LOG_NOTICE, "reload: stats.status_interval_ms %u -> %u", d->cfg.stats.status_interval_ms,
		       next->stats.status_interval_ms);
		eff->stats.status_interval_ms = next->stats.status_interval_ms;
		live++;
	}
	if (next->executor.shutdown_timeout_ms != d->cfg.executor.shutdown_timeout_ms) {
		gi_log(GI_LOG_NOTICE, "reload: executor.shutdown_timeout_ms %u -> %u (the next stop's drain)",
		       d->cfg.executor.shutdown_timeout_ms, next->executor.shutdown_timeout_ms);
		eff->executor.shutdown_timeout_ms = next->executor.shutdown_timeout_ms;
		live++;
	}

	/* 6: the running config becomes the effective one */
	gi_stats_lock();
	d->cfg = *eff;
	if (failed == 0)
		d->reloads_ok++;
	gi_stats_unlock();
	gi_config_free(next);
	free(next);
	free(probe);
	free(eff);

	if (failed < 0) {
		snprintf(status, sizeof(status), "configuration partly reloaded: %u change%s applied, a live step failed "
			 "(see the log)", live, live == 1 ? "" : "s");
		gi_log(GI_LOG_ERR, "reload: %s", status);
		return reload_failed(d, failed, status);
	}
	if (restart)
		snprintf(status, sizeof(status), "configuration reloaded: %u change%s applied, %u need%s a restart", live,
			 live == 1 ? "" : "s", restart, restart == 1 ? "s" : "");
	else
		snprintf(status, sizeof(status), "configuration reloaded: %u change%s applied", live, live == 1 ? "" : "s");
	gi_log(GI_LOG_NOTICE, "reload: %s: %s%s", d->cfg.path, status + strlen("configuration reloaded: "),
	       restart ? " (listed above; left as they are)" : "");
	gi_notify_reloaded(true, status);
	return 0;
}
