/*
 * lifecycle.c — building the daemon's pools, ports, streams and stats
 * listeners (lifecycle.h), for start-up and live reload alike.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "daemon.h"
#include "kernels/fmt_custom.h"
#include "kernels/fmt_rocev2.h"
#include "kernels/fmt_vita49.h"
#include "kernels/frame.h"
#include "lifecycle.h"
#include "notify.h"
#include "stats.h"

GI_STATIC_ASSERT(GI_MAX_QUEUES <= GI_PORT_MAX_QUEUES, "a port's every configured rx queue fits gi_port_conf");

/* ---- pools and ports ---------------------------------------------------- */

static uint32_t pool_data_room(const struct gi_config *c, uint32_t pool)
{
	if (c->pools[pool].buf_size)
		return c->pools[pool].buf_size;
	uint32_t mtu = 0, header_bytes = 0;
	for (uint32_t p = 0; p < c->n_ports; p++)
		for (uint32_t q = 0; q < c->ports[p].n_queues; q++) {
			const struct gi_cfg_queue *cq = &c->ports[p].queues[q];
			if (cq->pool_index == (int)pool)
				mtu = GI_MAX(mtu, c->ports[p].mtu);
			if (cq->split.enabled && cq->split.header_pool_index == (int)pool)
				header_bytes = GI_MAX(header_bytes, cq->split.header_bytes);
		}
	/* headroom + Ethernet header + two VLAN tags + FCS room for packet pools,
	 * headroom + header_bytes for header pools; cache-line rounded */
	uint32_t room = mtu ? RTE_PKTMBUF_HEADROOM + mtu + 14 + 8 + 4 : 0;
	return (uint32_t)GI_ALIGN_UP(GI_MAX(room, RTE_PKTMBUF_HEADROOM + header_bytes), 64);
}

int gi_daemon_pools_ports_start(struct gi_daemon *d)
{
	const struct gi_config *c = &d->cfg;
	int rc;

	for (uint32_t p = 0; p < c->n_ports; p++) {
		rc = gi_port_find(c->ports[p].name, c->ports[p].device, &d->port_ids[p]);
		if (rc < 0)
			return rc;
	}
	/* the backend decides where memory comes from: resolve it once, here */
	gi_notify("STATUS=probing GPU backends");
	enum gi_backend requested = c->executor.backend;
	if (requested == GI_BACKEND_AUTO)
		for (uint32_t p = 0; p < c->n_ports && requested == GI_BACKEND_AUTO; p++)
			for (uint32_t q = 0; q < c->ports[p].n_queues; q++) {
				const struct gi_cfg_queue *cq = &c->ports[p].queues[q];
				int pool = cq->split.enabled ? cq->split.header_pool_index : cq->pool_index;
				if (c->pools[pool].kind == GI_MEM_HOST || c->pools[cq->pool_index].kind == GI_MEM_HOST) {
					/* a GPU executor could not read those packets: auto means host here */
					gi_log(GI_LOG_INFO,
					       "backend auto: port %s queue %u receives into kind host memory, which a GPU "
					       "cannot read; using the host executor (use host_pinned or device pools for "
					       "the GPU)",
					       c->ports[p].name, q);
					requested = GI_BACKEND_HOST;
					break;
				}
			}
	rc = gi_mem_setup(requested, c->executor.device, &d->cuda, &d->mem);
	if (rc < 0)
		return rc;
	d->mem_up = true;
	d->backend = gi_backend_name(d->mem.backend); /* gi_mem_setup() logged the choice and why */
	char err[512];
	for (uint32_t i = 0; i < c->n_pools; i++)
		if (!gi_mem_choice_provider(&d->mem, c->pools[i].kind, c->pools[i].name, err, sizeof(err))) {
			gi_log(GI_LOG_ERR, "%s", err);
			return -ENODEV;
		}
	/* a GPU executor dereferences packet and header addresses: their pools must be GPU-visible */
	if (d->mem.backend != GI_BACKEND_HOST)
		for (uint32_t p = 0; p < c->n_ports; p++)
			for (uint32_t q = 0; q < c->ports[p].n_queues; q++) {
				const struct gi_cfg_queue *cq = &c->ports[p].queues[q];
				int pool = cq->split.enabled ? cq->split.header_pool_index : cq->pool_index;
				int other = cq->pool_index;
				if (c->pools[pool].kind == GI_MEM_HOST || c->pools[other].kind == GI_MEM_HOST) {
					gi_log(GI_LOG_ERR,
					       "port %s queue %u: backend %s runs the kernels on the GPU, which cannot read "
					       "memory pool '%s' of kind host; use kind host_pinned (or device for the "
					       "payload pool), or backend: host",
					       c->ports[p].name, q, gi_backend_name(d->mem.backend),
					       c->pools[c->pools[pool].kind == GI_MEM_HOST ? pool : other].name);
					return -EINVAL;
				}
			}
	gi_notify("STATUS=creating memory pools");
	for (uint32_t i = 0; i < c->n_pools; i++) {
		struct gi_pool_conf pc = {
			.name = c->pools[i].name,
			.kind = c->pools[i].kind,
			.hugepages = c->pools[i].hugepages,
			.n_mbufs = c->pools[i].mbufs,
			.cache = c->pools[i].cache,
			.data_room = pool_data_room(c, i),
			.socket = (int)rte_socket_id(),
			.n_ports = c->n_ports,
			.ports = d->port_ids,
			.provider = gi_mem_choice_provider(&d->mem, c->pools[i].kind, c->pools[i].name, err,
							   sizeof(err)),
		};
		rc = gi_pool_create(&d->pools[i], &pc);
		if (rc < 0)
			return rc;
		d->n_pools = i + 1;
	}
	gi_notify("STATUS=starting ports");
	for (uint32_t p = 0; p < c->n_ports; p++) {
		const struct gi_cfg_port *cp = &c->ports[p];
		/* one rte_flow rule per stream of this port; only read during setup */
		static struct gi_flow_rule rules[GI_MAX_STREAMS];
		unsigned n_rules = 0;
		for (uint32_t i = 0; i < c->n_streams; i++) {
			unsigned r = 0;
			if (c->streams[i].port_index != (int)p)
				continue;
			/* streams sharing a UDP port (rocev2 QPs, VRT stream IDs) share its rule, and so its queue */
			while (r < n_rules && rules[r].udp_dst_port != c->streams[i].udp_dst_port)
				r++;
			if (r == n_rules)
				rules[n_rules++] = (struct gi_flow_rule){ .udp_dst_port = c->streams[i].udp_dst_port,
									 .queue = (uint16_t)c->streams[i].queue,
									 .stream = c->streams[i].name };
		}
		struct gi_port_conf pc = {
			.name = cp->name,
			.device = cp->device,
			.mtu = cp->mtu,
			.promiscuous = cp->promiscuous,
			.n_queues = (uint16_t)cp->n_queues,
			.flow_isolation = cp->flow_isolation,
			.flow_steering = cp->flow_steering,
			.rules = rules,
			.n_rules = n_rules,
			.xstats = cp->xstats,
			.n_xstats = cp->n_xstats,
			.rx_timestamp = cp->rx_timestamp,
		};
		for (uint32_t q = 0; q < cp->n_queues; q++) {
			const struct gi_cfg_queue *cq = &cp->queues[q];
			pc.descriptors[q] = (uint16_t)cq->descriptors;
			pc.pools[q] = d->pools[cq->pool_index].mp;
			if (cq->split.enabled) {
				pc.split[q].header_pool = d->pools[cq->split.header_pool_index].mp;
				pc.split[q].header_bytes = (uint16_t)cq->split.header_bytes;
			}
		}
		rc = gi_port_setup(&d->ports[p], d->port_ids[p], &pc);
		if (rc < 0)
			return rc;
		d->n_ports = p + 1;
	}
	return 0;
}

/* ---- streams: frame rings and the executor's lookup table ------------- */

/*
 * Where a stream's frames are assembled.  host and gpudev backends: in the
 * shared-memory ring consumers map (registered for the GPU on gpudev).
 * cuda: in GPU memory; the shared-memory object becomes its metadata mirror
 * and carries the CUDA IPC handle consumers open (kernels/frame.h).
 */
/* The ring header's record of the stream's tensor: block (config_check_fmt.c checked it). */
static void ring_tensor(const struct gi_cfg_stream *cs, struct gi_frame_tensor *ft)
{
	const struct gi_cfg_tensor *ct = &cs->tensor;
	memset(ft, 0, sizeof(*ft));
	ft->dtype = ct->dtype;
	ft->ndim = ct->n_shape;
	for (uint32_t d = 0; d < ct->n_shape; d++)
		ft->shape[d] = ct->shape[d];
	if (ct->to == GI_DT_NONE && gi_tensor_sample_complex((uint32_t)ct->sample))
		ft->shape[ft->ndim++] = 2; /* a complex integer typed as is: I and Q as a last dimension */
	ft->bytes = gi_tensor_bytes((uint32_t)ct->sample, ct->dtype, cs->frame_bytes);
	ft->sample = (uint32_t)ct->sample;
	ft->big = (uint32_t)ct->big;
	ft->missing = (uint32_t)ct->missing;
	ft->scale = ct->scale_v;
	ft->offset = ct->offset_v;
}

int gi_daemon_ring_open(struct gi_daemon *d, const struct gi_cfg_stream *cs, uint32_t index, uint64_t created_ns,
			struct gi_frame_store *fs, struct gi_stream_rt *st)
{
	struct gi_frame_tensor ft;
	if (cs->tensor.given)
		ring_tensor(cs, &ft);
	const struct gi_frame_store_spec sp = {
		.stream = cs->name,
		.shm = cs->shm,
		.index = index,
		.slots = cs->ring_slots,
		.packets = gi_cfg_slot_packets(cs),
		.payload_bytes = cs->payload_bytes,
		.frame_bytes = cs->frame_bytes,
		.format = cs->format,
		.created_ns = created_ns,
		.wake_token = d->wake ? d->wake_token : 0,
		.in_device = d->mem.backend == GI_BACKEND_CUDA,
		.tensor = cs->tensor.given ? &ft : NULL,
		.nic_ts = cs->port_index >= 0 && (uint32_t)cs->port_index < d->n_ports ? d->ports[cs->port_index].nic_ts : 0,
	};
	int rc = gi_frame_store_open(fs, &sp, &d->mem);
	if (rc < 0)
		return rc;
	if (d->wake && fs->shm.wake_fd >= 0 &&
	    (rc = gi_wake_server_add(d->wake, fs->shm.fd, fs->shm.wake_fd, cs->name)) < 0) {
		gi_log(GI_LOG_WARNING, "stream %s: its wake object cannot be served (%s): its consumers will poll",
		       cs->name, strerror(-rc));
		gi_frame_store_hdr(fs)->wake_token = 0;
	}
	/* host addresses: an executor that runs elsewhere maps them itself */
	st->ring = fs->ring;
	st->mirror = fs->mirror;
	st->waiters = gi_shm_waiters(&fs->shm);
	st->nic_ts = (uint16_t)sp.nic_ts;
	return 0;
}

void gi_daemon_ring_close(struct gi_daemon *d, struct gi_frame_store *fs, bool unlink_name)
{
	if (d->wake && fs->shm.va)
		gi_wake_server_remove(d->wake, fs->shm.fd);
	gi_frame_store_close(fs, unlink_name);
}

void gi_daemon_check_consumers(struct gi_daemon *d)
{
	static const char *const what[GI_CFAULT__COUNT] = {
		[GI_CFAULT_WAITERS_IMPLAUSIBLE] = "a consumer wrote an impossible sleeper count into its wake object",
		[GI_CFAULT_WAITERS_STALE] = "its wake object counts sleepers that are not there (a consumer killed "
					    "while asleep, or one that writes the count)",
		[GI_CFAULT_RING_NAME] = "its frame ring's name was removed or replaced by someone else: consumers "
					"that start now cannot find it",
	};
	for (uint32_t i = 0; i < d->cfg.n_streams && d->streams; i++) {
		struct gi_stream_rt *st = &d->streams[i];
		if (!(st->faults_logged & 1u << GI_CFAULT_RING_NAME) && gi_shm_name_gone(&d->store[i].shm))
			GI_COUNTER_ADD(&st->consumer_faults[GI_CFAULT_RING_NAME], 1);
		for (unsigned k = 0; k < GI_CFAULT__COUNT; k++) {
			if ((st->faults_logged & 1u << k) || !GI_COUNTER_READ(&st->consumer_faults[k]))
				continue;
			st->faults_logged |= 1u << k;
			gi_log(GI_LOG_WARNING,
			       "stream %s: %s; the daemon goes on (each wake-up costs one system call at most), "
			       "counted in gpuingest_consumer_faults_total{kind=\"%s\"}, logged once",
			       d->cfg.streams[i].name, what[k], (const char *const[])GI_CFAULT_NAMES[k]);
		}
	}
}

int gi_daemon_streams_start(struct gi_daemon *d)
{
	const struct gi_config *c = &d->cfg;
	size_t map_len = (size_t)c->n_ports * 65536u;
	struct timespec rt;

	clock_gettime(CLOCK_REALTIME, &rt);
	/* the wake socket, named by a token no other process can guess ahead of
	 * us (it is an abstract name: whoever binds it first owns it) */
	if (getrandom(&d->wake_token, sizeof(d->wake_token), 0) != (ssize_t)sizeof(d->wake_token) || !d->wake_token ||
	    gi_wake_server_start(&d->wake, d->wake_token) < 0)
		d->wake = NULL; /* said why; consumers poll */
	d->streams = calloc(c->n_streams ? c->n_streams : 1, sizeof(*d->streams));
	d->stream_map = malloc(map_len * sizeof(*d->stream_map));
	if (!d->streams || !d->stream_map) {
		gi_log(GI_LOG_ERR, "streams: out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < map_len; i++)
		d->stream_map[i] = GI_STREAM_NONE;

	for (uint32_t i = 0; i < c->n_streams; i++) {
		const struct gi_cfg_stream *cs = &c->streams[i];
		struct gi_stream_rt *st = &d->streams[i];
		int rc = gi_daemon_ring_open(d, cs, i, (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec,
					     &d->store[i], st);
		if (rc < 0)
			return rc;
		gi_stream_rt_configure(st, cs); /* format, geometry, window: the same code as reload */
		/* streams sharing a (port, UDP port) are chained; their formats tell them apart */
		uint16_t *head = &d->stream_map[(size_t)cs->port_index * 65536u + cs->udp_dst_port];
		st->next_same_udp = *head;
		*head = (uint16_t)i;
		gi_log(GI_LOG_INFO,
		       "stream %s: port %s queue %u udp %u, %" PRIu64 "-byte frames of %u x %u-byte packets (the last %u), "
		       "%u slots in %s%s",
		       cs->name, cs->port, cs->queue, cs->udp_dst_port, cs->frame_bytes, cs->frame_packets,
		       cs->payload_bytes, st->last_bytes, cs->ring_slots, cs->shm,
		       st->mirror ? " (frames in GPU memory, CUDA IPC)" : "");
	}
	d->exec_ctx.n_streams = c->n_streams;
	d->exec_ctx.n_ports = c->n_ports;
	d->exec_ctx.streams = d->streams;
	d->exec_ctx.map = d->stream_map;
	return 0;
}

/* ---- stats listeners --------------------------------------------------- */

int gi_daemon_stats_start(struct gi_daemon *d)
{
	const struct gi_cfg_stats *s = &d->cfg.stats;
	struct gi_http_conf hc = {
		.unix_path = s->unix_path,
		.unix_mode = 0660,
		.listen = s->listen,
		.render = gi_stats_render,
		.render_arg = d,
		.conn_timeout_s = 10,
		.max_conns = 64,
	};
	/* sockets from gpuingest.socket replace ours, served even if the config names none */
	if (gi_http_activation(&hc) == 0 && !s->unix_path[0] && !s->listen[0])
		return 0;
	return gi_http_start(&hc, &d->http);
}


/* ---- a stream's parameters ---------------------------------------------- */

void gi_stream_rt_configure(struct gi_stream_rt *st, const struct gi_cfg_stream *cs)
{
	st->format = cs->format;
	gi_format_params_init(&st->fp, cs->format);
	st->fp.resync_frames = cs->resync_frames;
	if (cs->format == GI_FORMAT_ROCEV2) {
		const struct gi_cfg_rocev2 *r = &cs->rocev2;
		struct gi_fmt_rocev2_params rp = {
			.base_va = r->base_va, .frame_bytes = cs->frame_bytes, .page_bytes = r->page_bytes,
			.pages = r->pages, .rkey = (uint32_t)(r->rkey < 0 ? 0 : r->rkey), .has_rkey = r->rkey >= 0,
			.dst_qp = cs->rocev2_dst_qp, .icrc = (uint32_t)r->icrc, .close_on = (uint32_t)r->close_on,
			.placement = (uint32_t)r->placement, .profile = (uint32_t)r->profile,
			.frame_end = (uint32_t)r->frame_end, .frame_crc = r->frame_crc == GI_ROCEV2_ICRC_VERIFY,
		};
		gi_fmt_rocev2_set(&st->fp, &rp);
		st->fp.seq_bits = r->psn_bits;
	}
	if (cs->format == GI_FORMAT_CUSTOM)
		gi_fmt_custom_setup(&st->fp, &cs->custom.map); /* the header map, counters' widths */
	if (cs->format == GI_FORMAT_VITA49) {
		struct gi_fmt_vita49_params vp = {
			.ts_step_ps = cs->vita49.ts_step_ps,
			.stream_id = (uint32_t)(cs->vita49_stream_id < 0 ? 0 : cs->vita49_stream_id),
			.has_stream_id = cs->vita49_stream_id >= 0,
		};
		gi_vita49_params_store(&st->fp, &vp);
		if (vp.ts_step_ps)
			st->fp.seq_bits = 64; /* the sequence comes from the timestamp, not the 4-bit count */
	}
	st->packets = gi_cfg_slot_packets(cs); /* with a frame-end packet of its own: one more */
	st->data_packets = cs->frame_packets;
	st->payload_bytes = cs->payload_bytes;
	st->last_bytes = (uint32_t)(cs->frame_bytes - (uint64_t)(cs->frame_packets - 1) * cs->payload_bytes);
	st->window = cs->reorder_window;
	st->frame_timeout_ns = (uint64_t)cs->frame_timeout_ms * 1000000u;
}
