/*
 * config_check.c — cross-checks between sections: names and references,
 * ports, pools, lcores, streams, split headers, the executor
 * (config_internal.h lists the loader's files).
 */
#include "config_internal.h"

/* ---- cross-checks ---- */

/*
 * The node at a key path such as "ports[0].rx_queues[1].mempool", or the
 * deepest one that exists (a defaulted key points at its enclosing map).
 */
yaml_node_t *gi_cfg_node_at(struct gi_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

yaml_node_t *gi_cfg_node_at(struct gi_ctx *c, const char *fmt, ...)
{
	char path[GI_PATH_BUF], *seg, *save = NULL;
	yaml_node_t *n = yaml_document_get_root_node(c->doc);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	for (seg = strtok_r(path, ".", &save); seg && n; seg = strtok_r(NULL, ".", &save)) {
		char *bracket = strchr(seg, '[');
		unsigned long idx = bracket ? strtoul(bracket + 1, NULL, 10) : 0;
		yaml_node_t *next = NULL;

		if (bracket)
			*bracket = '\0';
		if (n->type != YAML_MAPPING_NODE)
			break;
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *kn = yaml_document_get_node(c->doc, p->key);
			if (kn->type == YAML_SCALAR_NODE && strcmp((const char *)kn->data.scalar.value, seg) == 0) {
				next = yaml_document_get_node(c->doc, p->value);
				break;
			}
		}
		if (next && bracket) {
			if (next->type != YAML_SEQUENCE_NODE ||
			    idx >= (unsigned long)(next->data.sequence.items.top - next->data.sequence.items.start))
				break;
			next = yaml_document_get_node(c->doc, next->data.sequence.items.start[idx]);
		}
		if (!next)
			break;
		n = next;
	}
	return n;
}

yaml_mark_t gi_cfg_mark_of(yaml_node_t *n)
{
	yaml_mark_t zero = { 0, 0, 0 };

	return n ? n->start_mark : zero;
}

/* Names defined in a section, "a, b, c", for "(defined: …)" hints. */
static const char *list_names(const char *first, size_t stride, uint32_t count, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < count && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", first + i * stride);
	return count ? buf : "none";
}

static void check_unique(struct gi_ctx *c, const char *section, const char *first, size_t stride, uint32_t count)
{
	for (uint32_t i = 1; i < count; i++) {
		const char *name = first + i * stride;
		for (uint32_t j = 0; j < i; j++) {
			if (*name && strcmp(name, first + j * stride) == 0) {
				char path[GI_PATH_BUF];
				gi_cfg_fmt_path(path, sizeof(path), "%s[%u].name", section, i);
				gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path, "duplicate name '%s' (first at line %zu)",
				       name, gi_cfg_mark_of(gi_cfg_node_at(c, "%s[%u].name", section, j)).line + 1);
				break;
			}
		}
	}
}

static int find_name(const char *first, size_t stride, uint32_t count, const char *name)
{
	for (uint32_t i = 0; i < count; i++)
		if (strcmp(first + i * stride, name) == 0)
			return (int)i;
	return -1;
}

/* The header pool of a split queue: defined, and readable by the CPU that parses segment 0. */
static void check_split(struct gi_ctx *c, struct gi_config *cfg, uint32_t p, uint32_t q)
{
	struct gi_cfg_split *sp = &cfg->ports[p].queues[q].split;
	char path[GI_PATH_BUF], names[GI_PATH_MAX];

	sp->header_pool_index = -1;
	if (!sp->enabled || !sp->header_mempool[0])
		return; /* a missing header_mempool is reported by the walker */
	gi_cfg_fmt_path(path, sizeof(path), "ports[%u].rx_queues[%u].split.header_mempool", p, q);
	sp->header_pool_index = find_name(cfg->pools[0].name, sizeof(cfg->pools[0]), cfg->n_pools, sp->header_mempool);
	if (sp->header_pool_index < 0) {
		if (cfg->n_pools)
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path, "no memory pool named '%s' (defined: %s)",
			       sp->header_mempool,
			       list_names(cfg->pools[0].name, sizeof(cfg->pools[0]), cfg->n_pools, names, sizeof(names)));
		return;
	}
	if (cfg->pools[sp->header_pool_index].kind == GI_MEM_DEVICE)
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
		       "memory pool '%s' is of kind device, but the CPU parses headers from segment 0 (allowed: a pool of "
		       "kind host or host_pinned)",
		       sp->header_mempool);
}

/* Does a comma-separated key=value devargs string set `key` to something other than 0? */
static bool devarg_on(const char *devargs, const char *key)
{
	size_t klen = strlen(key);

	for (const char *s = devargs; *s;) {
		const char *end = strchr(s, ',');
		size_t n = end ? (size_t)(end - s) : strlen(s);
		if (n > klen && strncmp(s, key, klen) == 0 && s[klen] == '=')
			return !(n == klen + 2 && s[klen + 1] == '0');
		s += n + (end != NULL);
	}
	return false;
}

/*
 * mlx5 multi-packet RQ (mprq_en=1) receives into strides of its own host
 * buffers and attaches or copies them into mbufs: with a device pool the
 * packet bytes would not land in GPU memory.
 */
static void check_mprq(struct gi_ctx *c, const struct gi_config *cfg, uint32_t p)
{
	const struct gi_cfg_port *port = &cfg->ports[p];
	char path[GI_PATH_BUF];

	if (!devarg_on(port->devargs, "mprq_en"))
		return;
	for (uint32_t q = 0; q < port->n_queues; q++) {
		int pi = port->queues[q].pool_index;
		if (pi >= 0 && cfg->pools[pi].kind == GI_MEM_DEVICE) {
			gi_cfg_fmt_path(path, sizeof(path), "ports[%u].devargs", p);
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "mprq_en=1 (mlx5 multi-packet RQ) receives into host buffers of the driver's own, but "
			       "queue %u's pool '%s' is of kind device: packets would not land in GPU memory "
			       "(allowed: drop mprq_en, or use a host/host_pinned pool)",
			       q, cfg->pools[pi].name);
			return;
		}
	}
}

/*
 * Two ports of one device: EAL probes a device once, so the second port
 * would configure the first one's queues again and fail with "Device or
 * resource busy".  A vdev is its name (before the first comma); a PCI
 * function is its address, domain 0000 if left out, whatever its devargs
 * (the daemon finds a port by its address: pmd_glue/port.c, gi_port_find).
 */
static bool same_device(const struct gi_cfg_port *a, const struct gi_cfg_port *b)
{
	if (a->is_pci != b->is_pci)
		return false;
	if (a->is_pci) {
		const char *da = strlen(a->device) == 7 ? "0000:" : a->device;
		const char *db = strlen(b->device) == 7 ? "0000:" : b->device;
		const char *x = a->device + (strlen(a->device) == 7 ? 0 : 5);
		const char *y = b->device + (strlen(b->device) == 7 ? 0 : 5);
		return strncasecmp(da, db, 5) == 0 && strcasecmp(x, y) == 0;
	}
	size_t n = strcspn(a->device, ",");
	return n == strcspn(b->device, ",") && strncmp(a->device, b->device, n) == 0;
}

/* An rx lcore polls at most GI_MAX_QUEUES_PER_LCORE queues: one line for the first queue past it. */
static void check_lcore_queues(struct gi_ctx *c, const struct gi_config *cfg, uint32_t p, uint32_t q)
{
	uint32_t lcore = cfg->ports[p].queues[q].lcore, n = 0;
	char path[GI_PATH_BUF];

	for (uint32_t pp = 0; pp <= p; pp++)
		for (uint32_t qq = 0; qq < (pp < p ? cfg->ports[pp].n_queues : q + 1); qq++)
			n += cfg->ports[pp].queues[qq].lcore == lcore;
	if (n != GI_MAX_QUEUES_PER_LCORE + 1)
		return;
	gi_cfg_fmt_path(path, sizeof(path), "ports[%u].rx_queues[%u].lcore", p, q);
	gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
		      "lcore %u polls %u rx queues before this one (allowed: at most %u queues per lcore, of any ports; "
		      "give this queue another lcore)",
		      lcore, GI_MAX_QUEUES_PER_LCORE, GI_MAX_QUEUES_PER_LCORE);
}

static void check_ports(struct gi_ctx *c, struct gi_config *cfg)
{
	char path[GI_PATH_BUF], names[GI_PATH_MAX];

	for (uint32_t p = 0; p < cfg->n_ports; p++) {
		struct gi_cfg_port *port = &cfg->ports[p];
		for (uint32_t j = 0; j < p; j++) {
			if (!port->device[0] || !same_device(&cfg->ports[j], port))
				continue;
			gi_cfg_fmt_path(path, sizeof(path), "ports[%u].device", p);
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
				      "'%s' is port %s's device already (line %zu) (allowed: a device no other port names; "
				      "one port takes all of a device's rx queues)",
				      port->device, cfg->ports[j].name,
				      gi_cfg_mark_of(gi_cfg_node_at(c, "ports[%u].device", j)).line + 1);
			break;
		}
		for (uint32_t q = 0; q < port->n_queues; q++) {
			struct gi_cfg_queue *rxq = &port->queues[q];
			gi_cfg_fmt_path(path, sizeof(path), "ports[%u].rx_queues[%u].mempool", p, q);
			rxq->pool_index = find_name(cfg->pools[0].name, sizeof(cfg->pools[0]), cfg->n_pools, rxq->mempool);
			/* no pools at all is reported already; don't repeat it per queue */
			if (rxq->pool_index < 0 && rxq->mempool[0] && cfg->n_pools)
				gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path, "no memory pool named '%s' (defined: %s)",
				       rxq->mempool,
				       list_names(cfg->pools[0].name, sizeof(cfg->pools[0]), cfg->n_pools, names,
						  sizeof(names)));
			gi_cfg_fmt_path(path, sizeof(path), "ports[%u].rx_queues[%u].lcore", p, q);
			if (rxq->lcore == cfg->main_lcore)
				gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
				       "lcore %u is eal.main_lcore (allowed: any other lcore; the main lcore runs the control loop)",
				       rxq->lcore);
			check_lcore_queues(c, cfg, p, q);
			check_split(c, cfg, p, q);
			/* vdevs (memif, pcap, af_packet…) copy packets into mbufs with the CPU */
			if (rxq->pool_index >= 0 && cfg->pools[rxq->pool_index].kind == GI_MEM_DEVICE && !port->is_pci) {
				gi_cfg_fmt_path(path, sizeof(path), "ports[%u].rx_queues[%u].mempool", p, q);
				gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
				       "pool '%s' is of kind device, but port %s is a vdev whose driver writes packets with "
				       "the CPU (allowed: host or host_pinned; device needs a PCI NIC with GPUDirect RDMA)",
				       rxq->mempool, port->name);
			}
		}
		check_mprq(c, cfg, p);
		if (port->flow_isolation && !port->flow_steering) {
			gi_cfg_fmt_path(path, sizeof(path), "ports[%u].flow_isolation", p);
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "isolation with flow_steering: false would drop every packet: isolated mode only delivers "
			       "what an rte_flow rule matches (allowed: false, or set flow_steering: true)");
		}
	}
}

/*
 * An explicit buf_size must hold headroom + frame of the largest MTU using
 * the pool, and headroom + header_bytes of every split queue taking its
 * header segment from it; one line per pool, naming the largest need.
 */
static void check_pools(struct gi_ctx *c, const struct gi_config *cfg)
{
	for (uint32_t i = 0; i < cfg->n_pools; i++) {
		const struct gi_cfg_port *worst = NULL;
		uint32_t hdr_need = 0, hdr_port = 0, hdr_queue = 0;

		for (uint32_t p = 0; p < cfg->n_ports; p++)
			for (uint32_t q = 0; q < cfg->ports[p].n_queues; q++) {
				const struct gi_cfg_queue *rxq = &cfg->ports[p].queues[q];
				if (rxq->pool_index == (int)i && (!worst || cfg->ports[p].mtu > worst->mtu))
					worst = &cfg->ports[p];
				if (rxq->split.enabled && rxq->split.header_pool_index == (int)i &&
				    GI_MBUF_HEADROOM + rxq->split.header_bytes > hdr_need) {
					hdr_need = GI_MBUF_HEADROOM + rxq->split.header_bytes;
					hdr_port = p;
					hdr_queue = q;
				}
			}
		if (!cfg->pools[i].buf_size)
			continue;
		uint32_t need = worst ? GI_MBUF_HEADROOM + worst->mtu + GI_ETH_OVERHEAD : 0;
		char path[GI_PATH_BUF];
		gi_cfg_fmt_path(path, sizeof(path), "memory[%u].buf_size", i);
		if (cfg->pools[i].buf_size < need && need >= hdr_need)
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "%u is too small for port %s (mtu %u): needs at least %u (%d headroom + mtu + %d)",
			       cfg->pools[i].buf_size, worst->name, worst->mtu, need, GI_MBUF_HEADROOM, GI_ETH_OVERHEAD);
		else if (cfg->pools[i].buf_size < hdr_need)
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "%u is too small for the header segment of port %s queue %u: needs at least %u "
			       "(%d headroom + split.header_bytes %u)",
			       cfg->pools[i].buf_size, cfg->ports[hdr_port].name, hdr_queue, hdr_need, GI_MBUF_HEADROOM,
			       cfg->ports[hdr_port].queues[hdr_queue].split.header_bytes);
	}
}

static bool lcore_runs_queue(const struct gi_config *cfg, uint32_t lcore)
{
	for (uint32_t p = 0; p < cfg->n_ports; p++)
		for (uint32_t q = 0; q < cfg->ports[p].n_queues; q++)
			if (cfg->ports[p].queues[q].lcore == lcore)
				return true;
	return false;
}

static void check_lcores(struct gi_ctx *c, const struct gi_config *cfg)
{
	char path[GI_PATH_BUF];

	for (uint32_t i = 0; i < cfg->n_lcores; i++) {
		const struct gi_cfg_lcore *l = &cfg->lcores[i];
		uint32_t j;

		if (l->id == GI_LCORE_UNSET)
			continue;
		gi_cfg_fmt_path(path, sizeof(path), "lcores[%u].id", i);
		for (j = 0; j < i && cfg->lcores[j].id != l->id; j++)
			;
		if (j < i)
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path, "duplicate lcore %u (first at line %zu)", l->id,
			       gi_cfg_mark_of(gi_cfg_node_at(c, "lcores[%u].id", j)).line + 1);
		else if (!lcore_runs_queue(cfg, l->id))
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "lcore %u runs no rx queue (allowed: an lcore named by some ports[].rx_queues[].lcore)",
			       l->id);
	}
}

/*
 * eal.args may not set the lcores: the daemon derives --lcores and
 * --main-lcore from eal.main_lcore and ports[].rx_queues[].lcore and puts
 * them after eal.args (main.c's EAL start), and EAL 22.11 refuses a second
 * core option.  Refused in every spelling EAL's getopt_long takes: a long
 * option alone or with '=VALUE', or any abbreviation of it that names it
 * alone (--lc, --mai, --mas: shorter ones are ambiguous, EAL's own error);
 * -l or -c, the value attached or not, and after the flags that take no
 * value (-vl0-3).  A bare '--' too: it would end EAL's options before the
 * daemon's own.
 */
static bool eal_lcore_option(const char *a)
{
	static const struct {
		const char *name;
		size_t unique; /* the shortest unambiguous abbreviation among EAL's long options */
	} owned[] = { { "lcores", 2 }, { "main-lcore", 3 }, { "master-lcore", 3 } };

	if (a[0] != '-')
		return false;
	if (a[1] == '-') {
		const char *name = a + 2;
		const size_t n = strcspn(name, "=");
		for (size_t k = 0; k < sizeof(owned) / sizeof(owned[0]); k++)
			if (n >= owned[k].unique && n <= strlen(owned[k].name) && strncmp(name, owned[k].name, n) == 0)
				return true;
		return false;
	}
	for (const char *f = a + 1; *f; f++) { /* EAL's short options: "a:b:c:s:d:hl:S:m:n:r:v" */
		if (*f == 'l' || *f == 'c')
			return true;
		if (*f != 'h' && *f != 'v')
			break; /* an option whose value is the rest */
	}
	return false;
}

static void check_eal(struct gi_ctx *c, const struct gi_config *cfg)
{
	char path[GI_PATH_BUF];

	for (uint32_t i = 0; i < cfg->n_eal_args; i++) {
		const char *a = cfg->eal_args[i];
		gi_cfg_fmt_path(path, sizeof(path), "eal.args[%u]", i);
		if (strcmp(a, "--") == 0)
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
				      "'--' ends EAL's options, and the daemon's own come after eal.args (allowed: EAL "
				      "options only)");
		else if (eal_lcore_option(a))
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
				      "'%s' sets the lcores, which the daemon derives from the config (allowed: no -l, "
				      "-c, --lcores, --main-lcore or --master-lcore; set eal.main_lcore and "
				      "ports[].rx_queues[].lcore instead)",
				      a);
	}
}

/*
 * May two streams match the same (port, UDP port)?  Only when their formats
 * tell their packets apart (gi_stream_match): vita49 streams by distinct
 * stream IDs, each one given.
 */
static bool streams_share_udp(const struct gi_cfg_stream *a, const struct gi_cfg_stream *b)
{
	if (a->format == GI_FORMAT_VITA49 && b->format == GI_FORMAT_VITA49)
		return a->vita49_stream_id >= 0 && b->vita49_stream_id >= 0 &&
		       a->vita49_stream_id != b->vita49_stream_id;
	/* rocev2 streams by destination QP; gi_cfg_check_rocev2() reports a QP used twice */
	if (a->format == GI_FORMAT_ROCEV2 && b->format == GI_FORMAT_ROCEV2)
		return true;
	return false;
}

/*
 * frame.packets and frame.bytes: a frame is `packets` packets of
 * payload_bytes, the last of which may be shorter (frame.bytes not a
 * multiple of payload_bytes: cameras, most sensors).  Either key gives the
 * other; both must agree.
 */
static void check_frame_geometry(struct gi_ctx *c, struct gi_cfg_stream *s, uint32_t i)
{
	char path[GI_PATH_BUF];
	uint64_t pb = s->payload_bytes;

	if (!pb)
		return; /* missing: reported already */
	if (!s->frame_packets && !s->frame_bytes) {
		yaml_node_t *f = gi_cfg_node_at(c, "streams[%u].frame", i);
		gi_cfg_fmt_path(path, sizeof(path), "streams[%u].frame.packets", i);
		if (f && f != gi_cfg_node_at(c, "streams[%u]", i))
			gi_cfg_err_at(c, gi_cfg_mark_of(f), path, "missing required key (allowed: 1..65535, or give frame.bytes)");
		return;
	}
	if (!s->frame_bytes) {
		s->frame_bytes = s->frame_packets * pb;
		return;
	}
	uint64_t packets = (s->frame_bytes + pb - 1) / pb;
	gi_cfg_fmt_path(path, sizeof(path), "streams[%u].frame.bytes", i);
	if (packets > GI_FRAME_MAX_PACKETS) {
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
		       "%" PRIu64 " bytes take %" PRIu64 " packets of payload_bytes %" PRIu64 ", more than a frame holds "
		       "(allowed: 1..%" PRIu64 ")", s->frame_bytes, packets, pb, pb * GI_FRAME_MAX_PACKETS);
	} else if (s->frame_packets && s->frame_packets != packets) {
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
		       "%" PRIu64 " bytes are %" PRIu64 " packets of payload_bytes %" PRIu64 ", not frame.packets %u "
		       "(allowed: %" PRIu64 "..%" PRIu64 ", or leave out frame.packets)", s->frame_bytes, packets, pb,
		       s->frame_packets, (s->frame_packets - 1) * pb + 1, s->frame_packets * pb);
	} else {
		s->frame_packets = (uint32_t)packets;
	}
}

static void check_streams(struct gi_ctx *c, struct gi_config *cfg)
{
	char path[GI_PATH_BUF], names[GI_PATH_MAX];

	for (uint32_t i = 0; i < cfg->n_streams; i++) {
		struct gi_cfg_stream *s = &cfg->streams[i];

		check_frame_geometry(c, s, i);

		if (s->shm[0] == '\0')
			snprintf(s->shm, sizeof(s->shm), "/gpuingest-%s", s->name);
		for (uint32_t j = 0; j < i; j++) {
			/* (two streams of one name: that is the line, reported already) */
			if (strcmp(cfg->streams[j].shm, s->shm) != 0 || strcmp(cfg->streams[j].name, s->name) == 0)
				continue;
			/* the name, where ring.shm is left to its default (a name taken by another's explicit one) */
			gi_cfg_fmt_path(path, sizeof(path), "streams[%u].ring.shm", i);
			if (!gi_cfg_node_at(c, "%s", path) || gi_cfg_node_at(c, "%s", path) == gi_cfg_node_at(c, "streams[%u]", i))
				gi_cfg_fmt_path(path, sizeof(path), "streams[%u].name", i);
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
				      "frame ring %s is stream %s's already (line %d) (allowed: a ring.shm no other stream "
				      "uses; its consumers would read the other stream's frames)",
				      s->shm, cfg->streams[j].name, cfg->streams[j].line);
			break;
		}
		s->port_index = find_name(cfg->ports[0].name, sizeof(cfg->ports[0]), cfg->n_ports, s->port);
		gi_cfg_fmt_path(path, sizeof(path), "streams[%u].port", i);
		if (s->port_index < 0 && s->port[0] && cfg->n_ports)
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path, "no port named '%s' (defined: %s)", s->port,
			       list_names(cfg->ports[0].name, sizeof(cfg->ports[0]), cfg->n_ports, names, sizeof(names)));
		/* match.udp_dst_port: rocev2 defaults to 4791, every other format names it */
		if (!s->udp_dst_port && s->format == GI_FORMAT_ROCEV2) {
			s->udp_dst_port = GI_ROCEV2_UDP_PORT;
		} else if (!s->udp_dst_port) {
			yaml_node_t *m = gi_cfg_node_at(c, "streams[%u].match", i);
			gi_cfg_fmt_path(path, sizeof(path), "streams[%u].match.udp_dst_port", i);
			/* reported already: no match: at all, or a udp_dst_port out of range */
			if (m && m != gi_cfg_node_at(c, "streams[%u]", i) && gi_cfg_node_at(c, "%s", path) == m)
				gi_cfg_err_at(c, gi_cfg_mark_of(m), path, "missing required key (allowed: 1..65535; format rocev2 "
				       "defaults to 4791)");
		}
		if (s->port_index >= 0 && s->udp_dst_port) {
			for (uint32_t j = 0; j < i; j++) {
				if (cfg->streams[j].port_index == s->port_index && cfg->streams[j].udp_dst_port == s->udp_dst_port &&
				    !streams_share_udp(&cfg->streams[j], s)) {
					gi_cfg_fmt_path(path, sizeof(path), "streams[%u].match.udp_dst_port", i);
					gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
					       "udp port %u on port %s is already matched by stream '%s' (line %d)",
					       s->udp_dst_port, s->port, cfg->streams[j].name, cfg->streams[j].line);
					break;
				}
			}
		}
		/* rocev2 and custom have exact checks of their own (gi_cfg_check_rocev2(), the custom map);
		 * a VITA 49 prologue plus trailer is at most udp_seq's 32 bytes */
		if (s->port_index >= 0 && s->payload_bytes &&
		    (s->format == GI_FORMAT_UDP_SEQ || s->format == GI_FORMAT_VITA49) &&
		    s->payload_bytes + GI_IPV4_UDP_HDR_LEN + GI_UDP_SEQ_HDR_LEN > cfg->ports[s->port_index].mtu) {
			gi_cfg_fmt_path(path, sizeof(path), "streams[%u].frame.payload_bytes", i);
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "%u does not fit port %s's mtu %u (allowed: 1..%d: mtu - 20 IPv4 - 8 UDP - %u %s)",
			       s->payload_bytes, s->port, cfg->ports[s->port_index].mtu,
			       (int)cfg->ports[s->port_index].mtu - GI_IPV4_UDP_HDR_LEN - (int)GI_UDP_SEQ_HDR_LEN,
			       GI_UDP_SEQ_HDR_LEN, s->format == GI_FORMAT_VITA49 ? "VITA 49 header words" : "udp_seq");
		}
		if (s->port_index >= 0 && s->queue >= cfg->ports[s->port_index].n_queues) {
			gi_cfg_fmt_path(path, sizeof(path), "streams[%u].queue", i);
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "stream %s: %u is not an rx queue of port %s, which has %u (allowed: 0..%u)", s->name, s->queue,
			       s->port, cfg->ports[s->port_index].n_queues, cfg->ports[s->port_index].n_queues - 1);
		}
		if (s->reorder_window >= s->ring_slots) {
			gi_cfg_fmt_path(path, sizeof(path), "streams[%u].reorder_window", i);
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "%u must be less than ring.slots (allowed: 1..%u)", s->reorder_window, s->ring_slots - 1);
		}
	}
}

/*
 * vita49's keys belong to vita49 streams; a VRT payload is whole 32-bit
 * words.  (The MTU check of check_streams() already holds for VRT: its
 * largest prologue plus trailer, 8 words, is udp_seq's 32 bytes.)
 */

/*
 * Every stream's headers must lie in segment 0 of every split queue of its
 * port (without steering, or with RSS, a stream may arrive on any of them):
 * the CPU and the kernels parse headers from segment 0 only.  One line per
 * queue, naming the first stream that does not fit.
 */
static void check_split_headers(struct gi_ctx *c, const struct gi_config *cfg)
{
	for (uint32_t p = 0; p < cfg->n_ports; p++)
		for (uint32_t q = 0; q < cfg->ports[p].n_queues; q++) {
			const struct gi_cfg_split *sp = &cfg->ports[p].queues[q].split;
			const struct gi_cfg_stream *first = NULL;
			unsigned more = 0;

			if (!sp->enabled || sp->header_bytes >= GI_SPLIT_MIN_HEADER_BYTES)
				continue;
			for (uint32_t i = 0; i < cfg->n_streams; i++)
				if (cfg->streams[i].port_index == (int)p) {
					if (first)
						more++;
					else
						first = &cfg->streams[i];
				}
			if (!first)
				continue;
			char path[GI_PATH_BUF], others[64] = "";
			if (more)
				snprintf(others, sizeof(others), " (and %u more stream%s)", more, more == 1 ? "" : "s");
			gi_cfg_fmt_path(path, sizeof(path), "ports[%u].rx_queues[%u].split.header_bytes", p, q);
			gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "%s", path)), path,
			       "%u bytes cannot hold the headers of stream %s%s on queue %u: needs at least %u "
			       "(14 Ethernet + 4 VLAN + 20 IPv4 + 8 UDP + %u udp_seq; allowed: %u..1024)",
			       sp->header_bytes, first->name, others, q, GI_SPLIT_MIN_HEADER_BYTES, GI_UDP_SEQ_HDR_LEN,
			       GI_SPLIT_MIN_HEADER_BYTES);
		}
}

/* 0000:03:00.0 or 03:00.0 */
static bool is_pci_address(const char *s)
{
	const char *pat = strlen(s) == 12 ? "hhhh:hh:hh.d" : "hh:hh.d";

	if (strlen(s) != strlen(pat))
		return false;
	for (; *pat; pat++, s++) {
		if ((*pat == 'h' && !isxdigit((unsigned char)*s)) || (*pat == 'd' && (*s < '0' || *s > '7')) ||
		    (*pat != 'h' && *pat != 'd' && *pat != *s))
			return false;
	}
	return true;
}

/* executor: modes and pipelines that belong to the other backend */
static void check_executor(struct gi_ctx *c, const struct gi_config *cfg)
{
	const struct gi_cfg_executor *e = &cfg->executor;
	bool gpu = e->backend == GI_BACKEND_CUDA || e->backend == GI_BACKEND_GPUDEV;

	if (e->threads_per_ring % 32)
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "executor.threads_per_ring")), "executor.threads_per_ring",
		       "%u is not a whole number of warps (allowed: a multiple of 32 in [32, %u])", e->threads_per_ring,
		       GI_EXEC_MAX_CTA);
	if (gpu && (e->mode == GI_EXEC_THREADS || e->mode == GI_EXEC_INLINE))
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "executor.mode")), "executor.mode",
		       "'%s' runs the executor on CPU threads, but backend %s runs it on the GPU (allowed with a GPU "
		       "backend: auto, persistent, launch)",
		       gi_cfg_enum_name(gi_cfg_exec_modes, e->mode), gi_cfg_enum_name(gi_cfg_backends, e->backend));
	if (gpu && e->pipeline == GI_PIPE_SERIAL)
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "executor.pipeline")), "executor.pipeline",
		       "'serial' is the host executor's reference path; backend %s runs the phased kernels (allowed "
		       "with a GPU backend: phased)",
		       gi_cfg_enum_name(gi_cfg_backends, e->backend));
	if (e->backend == GI_BACKEND_HOST && (e->mode == GI_EXEC_PERSISTENT || e->mode == GI_EXEC_LAUNCH))
		gi_cfg_err_at(c, gi_cfg_mark_of(gi_cfg_node_at(c, "executor.mode")), "executor.mode",
		       "'%s' describes how GPU kernels run; backend host runs threads (allowed with backend host: "
		       "auto, threads, inline)",
		       gi_cfg_enum_name(gi_cfg_exec_modes, e->mode));
}

void gi_cfg_cross_check(struct gi_ctx *c, struct gi_config *cfg)
{
	check_unique(c, "memory", cfg->pools[0].name, sizeof(cfg->pools[0]), cfg->n_pools);
	check_unique(c, "ports", cfg->ports[0].name, sizeof(cfg->ports[0]), cfg->n_ports);
	check_unique(c, "streams", cfg->streams[0].name, sizeof(cfg->streams[0]), cfg->n_streams);
	for (uint32_t p = 0; p < cfg->n_ports; p++)
		cfg->ports[p].is_pci = is_pci_address(cfg->ports[p].device);
	check_ports(c, cfg);
	check_pools(c, cfg);
	check_lcores(c, cfg);
	check_eal(c, cfg);
	check_executor(c, cfg);
	check_streams(c, cfg);
	gi_cfg_check_vita49(c, cfg);
	gi_cfg_check_custom(c, cfg);
	gi_cfg_check_tensor(c, cfg);
	gi_cfg_check_rocev2(c, cfg);
	check_split_headers(c, cfg);
}
