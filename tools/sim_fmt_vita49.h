/*
 * sim_fmt_vita49.h — gpuingest-sim's `vita49` streams: VRT IF data packets
 * (and context packets) built by sim_fmt_vita49.c.
 *
 * Single-threaded: the sim's main thread only.
 */
#ifndef GI_SIM_FMT_VITA49_H
#define GI_SIM_FMT_VITA49_H

#include <stdint.h>
#include <stdio.h>

#include "sim_port.h"

/* getopt_long values of the vita49 options (above every other OPT_*). */
enum {
	GI_SIM_OPT_VITA49_SID_BASE = 1100,
	GI_SIM_OPT_VITA49_NO_SID,
	GI_SIM_OPT_VITA49_CLASS_ID,
	GI_SIM_OPT_VITA49_TSI,
	GI_SIM_OPT_VITA49_TSF,
	GI_SIM_OPT_VITA49_TS_STEP,
	GI_SIM_OPT_VITA49_TRAILER,
	GI_SIM_OPT_VITA49_CONTEXT_EVERY,
	GI_SIM_OPT_VITA49_DST_PORTS,
};

#define GI_SIM_VITA49_OPTIONS                                                              \
	{ "stream-id-base", required_argument, NULL, GI_SIM_OPT_VITA49_SID_BASE },             \
	{ "vita49-no-stream-id", no_argument, NULL, GI_SIM_OPT_VITA49_NO_SID },                 \
	{ "vita49-class-id", no_argument, NULL, GI_SIM_OPT_VITA49_CLASS_ID },                   \
	{ "vita49-tsi", required_argument, NULL, GI_SIM_OPT_VITA49_TSI },                        \
	{ "vita49-tsf", required_argument, NULL, GI_SIM_OPT_VITA49_TSF },                        \
	{ "vita49-ts-step", required_argument, NULL, GI_SIM_OPT_VITA49_TS_STEP },                \
	{ "vita49-trailer", no_argument, NULL, GI_SIM_OPT_VITA49_TRAILER },                     \
	{ "context-every", required_argument, NULL, GI_SIM_OPT_VITA49_CONTEXT_EVERY },            \
	{ "dst-ports", required_argument, NULL, GI_SIM_OPT_VITA49_DST_PORTS }

#define GI_SIM_VITA49_USAGE                                                                \
	"  --dst-ports LIST        UDP destination port per stream, comma-separated like\n"  \
	"                          --geometry (any format; e.g. 5000,5000,5001 puts two\n"   \
	"                          vita49 streams on one port)\n"                          \
	"vita49 streams (--format vita49):\n"                                                \
	"  --stream-id-base N      VRT stream ID of stream i is N+i (default 0)\n"           \
	"  --vita49-no-stream-id   packet type 0 (no stream ID; one stream per UDP port)\n" \
	"  --vita49-class-id       add the class ID (2 words)\n"                            \
	"  --vita49-tsi KIND       integer timestamp: none utc gps other (default utc)\n"   \
	"  --vita49-tsf KIND       fractional timestamp: none samples real free (default\n"  \
	"                          real = picoseconds)\n"                                   \
	"  --vita49-ts-step N      timestamp increment per packet in TSF units (default\n"  \
	"                          1000000, i.e. 1 us of real time); lost packets advance\n" \
	"                          it too, so the daemon's vita49.ts_step_ps can count them\n" \
	"  --vita49-trailer        add the trailer word\n"                                  \
	"  --context-every N       an IF context packet after every N data packets of a\n"  \
	"                          stream (reported as malformed_by_reason.vita49_context)\n" \
	"  Packet count = seq mod 16; frame/packet index are derived from the packet's\n"    \
	"  number since the stream's first: payload pattern seed (stream ID & 0xffff,\n"   \
	"  that frame).  Malformed variants: ip truncated version length geometry.\n"

/* Handle one of the options above; exits with a usage error on a bad value. */
void gi_sim_vita49_option(struct gi_sim_cfg *c, int opt, const char *arg);
/* --dst-ports: item `stream` of `list` (the last repeats). 0, or -1 after a line on stderr. */
int gi_sim_dst_port(const char *list, uint32_t stream, uint16_t *port);
/* Set up stream `st` (format vita49). 0, or -1 after a line on stderr. */
int gi_sim_vita49_stream(struct gi_sim *sim, struct gi_sim_stream *st);
/* Build packet `p` (a data packet, a malformed variant or a context packet) at `u`; UDP payload length. */
uint32_t gi_sim_vita49_build(const struct gi_sim *sim, const struct gi_sim_stream *st, const struct gi_sim_pkt *p,
			     uint8_t *u);
/* The stream's extra malformed_by_reason entries (leading comma). */
void gi_sim_vita49_report(FILE *f, const struct gi_sim_stream *st);

#endif /* GI_SIM_FMT_VITA49_H */
