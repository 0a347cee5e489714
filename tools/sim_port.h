/*
 * sim_port.h — gpuingest-sim's state and its three ports (memif, pcap, udp).
 *
 * gpuingest-sim.c decides *what* goes on the wire (streams, impairments);
 * sim_port.c builds each packet (Ethernet/IPv4/UDP/udp_seq/pattern) and puts
 * it on the chosen port, counting per stream what the port accepted.
 *
 * Single-threaded: the sim's main thread only.
 */
#ifndef GI_SIM_PORT_H
#define GI_SIM_PORT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define GI_SIM_MAX_PAYLOAD 65000u /* IPv4 total length, mbuf data room and pcap snaplen all fit */
#define GI_SIM_MAX_DEPTH 4096u
#define GI_SIM_MAX_DUPS 8u
#define GI_SIM_BURST 32u

enum gi_sim_exit {
	GI_SIM_EXIT_OK = 0,
	GI_SIM_EXIT_USAGE = 2,
	GI_SIM_EXIT_PORT = 3,
	GI_SIM_EXIT_STALL = 4,
};

enum gi_sim_port_kind {
	GI_SIM_MEMIF = 1,
	GI_SIM_PCAP,
	GI_SIM_UDP,
};

/* Packet kinds: 0 is a good packet, the rest are the malformed variants in cycle order. */
enum gi_sim_kind {
	GI_SIM_GOOD = 0,
	GI_SIM_MAL_IP,        /* IPv4 total length larger than the frame (checksum still right) */
	GI_SIM_MAL_TRUNCATED, /* UDP payload shorter than the 32-byte header */
	GI_SIM_MAL_MAGIC,
	GI_SIM_MAL_VERSION,
	GI_SIM_MAL_LENGTH,    /* payload_len field != bytes after the header */
	GI_SIM_MAL_INDEX,     /* pkt_index >= packets_per_frame */
	GI_SIM_MAL_GEOMETRY,  /* packets_per_frame != the configured one, otherwise valid */
	GI_SIM_MAL_ROCEV2_ICRC,   /* rocev2: a wrong ICRC (sim_fmt_rocev2.c) */
	GI_SIM_MAL_ROCEV2_OPCODE, /* rocev2: an ACK to the stream's QP */
	GI_SIM_MAL_ROCEV2_VA,     /* rocev2: a WRITE ONLY whose RETH VA is off its PSN's place */
	GI_SIM_MAL_ROCEV2_RKEY,   /* hsb: a RETH R_Key other than the stream's */
	GI_SIM_MAL_ROCEV2_BOUNDS, /* hsb: a RETH VA on a page past the host's pages */
	GI_SIM_MAL__END,
	GI_SIM_VITA49_CONTEXT = 0x80, /* not malformed: a VRT context packet (sim_fmt_vita49.c) */
};
#define GI_SIM_MALFORMED_NAMES { "ip", "truncated", "magic", "version", "length", "index", "geometry", \
				 "rocev2_icrc", "rocev2_opcode", "rocev2_va", "rocev2_rkey", "rocev2_bounds" }
/* the variants a udp_seq stream sends (the rest belong to other formats) */
#define GI_SIM_MAL_UDP_SEQ_KINDS (((1u << (GI_SIM_MAL_GEOMETRY + 1)) - 1) & ~1u)

/* rocev2 streams' options (sim_fmt_rocev2.c) */
struct gi_sim_rocev2_cfg {
	uint32_t dst_qp;          /* stream i has QP dst_qp + i (default 256) */
	uint32_t opcode;          /* write | write-imm | send | send-imm | ud-send */
	uint64_t base_va;         /* RETH VA of a frame's byte 0 */
	bool qp_set, va_set;
	/* --format hsb */
	uint32_t hsb_form;        /* 0: the FPGA's (a frame-end packet of its own), 1: the software emulator's */
	uint32_t pages;           /* the host's pages (default 2) */
	uint32_t first_page;      /* the first frame's page (default 1: HSB may start there) */
	bool first_page_set;
	uint64_t page_bytes;      /* 0: roundup(frame bytes, 128) + 128, as HSB's host sets page_inc */
	uint32_t bad_crc_every;   /* every Nth frame's record carries a wrong CRC (0: none) */
};

/* vita49 streams' options (sim_fmt_vita49.c) */
struct gi_sim_vita49_cfg {
	uint32_t stream_id_base;  /* stream i has VRT stream ID base + i */
	uint32_t context_every;   /* a context packet after every N data packets, 0 = none */
	uint64_t ts_step;         /* timestamp increment per packet, TSF units, 0: 1000000 */
	uint64_t t0_s;            /* integer timestamp of every stream's first packet */
	uint8_t tsi_opt, tsf_opt; /* 1 + timestamp kind (0..3); 0: utc, real */
	bool class_id, trailer, no_sid;
	const char *dst_ports;    /* --dst-ports list, NULL: stream i uses dst_port + i */
};

struct gi_sim_cfg {
	enum gi_sim_port_kind kind;
	const char *port_spec;   /* as given, for the report */
	const char *port_arg;    /* memif socket path or pcap file */
	const char *geometry;    /* --geometry list, NULL: every stream uses ppf x payload */
	char udp_host[256];
	uint32_t streams;
	uint64_t frames;         /* per stream, 0 = unlimited */
	double duration_s;
	uint32_t ppf;
	uint32_t payload;
	uint64_t frame_bytes;    /* --frame-bytes, 0 = ppf * payload */
	double rate;             /* wire packets per second, 0 = unpaced */
	uint64_t seed;
	double loss, dup, reorder, malformed;
	uint32_t depth;
	uint32_t seq_start, frame_start;
	uint16_t dst_port, src_port;
	uint8_t src_mac[6], dst_mac[6];
	uint32_t src_ip, dst_ip; /* host order */
	double wait_link_s;
	int lcore;               /* -1: first CPU of our affinity mask */
	const char *eal_extra;
	double stall_s;
	uint32_t linger_ms;
	uint32_t start_delay_ms; /* pause between link-up and the first packet */
	const char *start_file;  /* NULL, or wait for it to exist before that pause */
	const char *pace_metrics; /* NULL, or gpuingestd's metrics: wait while its batch rings fill */
	uint32_t pace_batches;   /* ... more than this many batches queued */
	const char *formats;     /* --format list, NULL: every stream is udp_seq */
	uint32_t hdr_max;        /* largest UDP payload minus payload of any stream, 0: udp_seq's 32 */
	/* --custom specs: the k-th custom stream takes the k-th (the last repeats) */
#define GI_SIM_MAX_CUSTOM 16u
	const char *custom[GI_SIM_MAX_CUSTOM];
	uint32_t n_custom;
	struct gi_sim_vita49_cfg vita49;
	struct gi_sim_rocev2_cfg rocev2;
};

struct gi_sim_pkt {
	uint64_t ord;            /* index among the stream's unique packets */
	uint32_t seq;
	uint32_t frame;
	uint16_t pkt_index;
	uint8_t dup;             /* a copy is to follow */
	uint8_t dup_delay;       /* later originals of the stream before the copy (0..3) */
	uint8_t kind;            /* enum gi_sim_kind */
};

struct gi_sim_delayed {
	struct gi_sim_pkt p;
	uint32_t left;
};

struct gi_sim_stream {
	uint16_t id;
	uint16_t dst_port;
	uint32_t ppf;            /* packets per frame of this stream */
	uint32_t payload;        /* payload bytes per packet of this stream */
	uint32_t last;           /* ... of its frames' last data packet (--frame-bytes), else payload */
	uint32_t data;           /* packets of a frame with data: ppf, or ppf - 1 when a frame-end packet
				  * of its own follows them (hsb: the FPGA's form, and the emulator's when
				  * the record does not fit the last data packet) */
	bool hsb;                /* --format hsb: a Holoscan Sensor Bridge stream (rocev2, sim_fmt_rocev2.c) */
	uint64_t bytes_unique;   /* payload bytes of the unique packets sent (not dropped on purpose) */
	uint64_t crc_frame;      /* hsb: the frame whose CRC crc holds, +1 (0: none) */
	uint32_t crc;
	uint32_t format;         /* enum gi_format (kernels/format.h) */
	uint32_t mal_kinds;      /* bit k: malformed variant k fits this format; 0: all of them */
	const struct gi_sim_custom *custom; /* format custom: the header map (sim_fmt_custom.h) */
	uint32_t vrt_sid;        /* format vita49: VRT stream ID */
	uint64_t vrt_context;    /* format vita49: context packets sent */
	uint32_t roce_qp;        /* format rocev2: destination QP */
	bool done;
	uint64_t rng;
	uint64_t total;          /* unique packets to generate, UINT64_MAX: until stopped */
	uint32_t seq, frame, pkt_index;
	uint64_t max_out;        /* 1 + highest ord sent so far, 0 when none */
	struct gi_sim_delayed *held; /* reordered, at most depth + 1 */
	uint32_t n_held;
	struct gi_sim_delayed dups[GI_SIM_MAX_DUPS];
	uint32_t n_dups;
	uint32_t next_malformed;

	/* the report */
	uint64_t unique, dropped, duplicated, duplicated_reordered, reordered, malformed;
	uint64_t malformed_by_reason[GI_SIM_MAL__END - GI_SIM_MAL_IP];
	uint64_t sent;           /* accepted by the port */
	uint64_t tx_failed;      /* given up on */
};

struct gi_sim_port_state;
struct gi_sim_custom;

struct gi_sim {
	struct gi_sim_cfg cfg;
	struct gi_sim_stream *streams;
	struct gi_sim_port_state *port;
	uint64_t n_wire;         /* packets handed to the port, for pacing */
	double pace_next;        /* --pace-metrics: when to look at the daemon's rings next, */
	uint64_t pace_next_wire; /* ... or at which packet, whichever comes first */
	bool pace_off;           /* ... its metrics could not be read */
	uint64_t pace_waits;     /* ... waits for them to drain, 0.5 ms each */
	uint16_t ip_id;
	uint64_t last_ts_ns;      /* timestamp_ns of the packet built last */
	double t_start, t_end;
	int fatal;               /* enum gi_sim_exit once the port failed */
	char fatal_msg[256];
};

/* 0 or an exit code after one line on stderr.  `stop` aborts the link wait. */
int gi_sim_port_open(struct gi_sim *sim, volatile sig_atomic_t *stop);
/* Build and queue one packet; sets sim->fatal when the port gives up. */
void gi_sim_port_put(struct gi_sim *sim, struct gi_sim_stream *st, const struct gi_sim_pkt *p);
/* Push everything queued to the port (bounded by --stall-timeout). */
void gi_sim_port_flush(struct gi_sim *sim);
/* Let the peer drain (memif only). */
void gi_sim_port_linger(struct gi_sim *sim);
void gi_sim_port_close(struct gi_sim *sim);

/*
 * Build packet `p` of stream `st` at `buf` (at least gi_sim_frame_cap()
 * bytes): the full Ethernet frame when `l2`, else the UDP payload only.
 * Returns its length.
 */
uint32_t gi_sim_build(struct gi_sim *sim, const struct gi_sim_stream *st, const struct gi_sim_pkt *p, uint8_t *buf,
		      bool l2);
uint32_t gi_sim_frame_cap(const struct gi_sim_cfg *c);

/* Payload bytes of packet `idx` of a frame: the last data packet may be shorter (--frame-bytes), a
 * frame-end packet of its own (hsb) carries none. */
static inline uint32_t gi_sim_plen(const struct gi_sim_stream *st, uint32_t idx)
{
	return idx + 1 < st->data ? st->payload : idx + 1 == st->data ? st->last : 0u;
}

#endif /* GI_SIM_PORT_H */
