/*
 * sim_fmt_rocev2.h — gpuingest-sim's `rocev2` streams: RoCEv2 RDMA WRITE or
 * SEND packets with a correct ICRC, built by sim_fmt_rocev2.c.
 *
 * Single-threaded: the sim's main thread only.
 */
#ifndef GI_SIM_FMT_ROCEV2_H
#define GI_SIM_FMT_ROCEV2_H

#include <stdint.h>

#include "sim_port.h"

/* getopt_long values of the rocev2 options (above every other OPT_*). */
enum {
	GI_SIM_OPT_ROCEV2_DST_QP = 1200,
	GI_SIM_OPT_ROCEV2_OPCODE,
	GI_SIM_OPT_ROCEV2_BASE_VA,
};

#define GI_SIM_ROCEV2_OPTIONS                                                  \
	{ "dst-qp", required_argument, NULL, GI_SIM_OPT_ROCEV2_DST_QP },       \
	{ "opcode", required_argument, NULL, GI_SIM_OPT_ROCEV2_OPCODE },       \
	{ "base-va", required_argument, NULL, GI_SIM_OPT_ROCEV2_BASE_VA }

#define GI_SIM_ROCEV2_USAGE                                                                    \
	"rocev2 streams (--format rocev2; memif and pcap ports only: the ICRC covers the\n"   \
	"IPv4 header):\n"                                                                      \
	"  --dst-qp N              destination QP of stream i is N+i (default 256); every\n"  \
	"                          rocev2 stream goes to UDP port 4791\n"                     \
	"  --opcode OP             write (RC RDMA WRITE FIRST/MIDDLE/LAST/ONLY, one\n"        \
	"                          message per frame; default), write-imm (the LAST or\n"    \
	"                          ONLY with immediate), send, send-imm (RC SEND, likewise),\n" \
	"                          ud-send (UD SEND ONLY, one message per packet)\n"          \
	"  --base-va VA            RETH VA of byte 0 of every frame (default 0, as the\n"  \
	"                          daemon's rocev2.base_va)\n"                            \
	"  PSN = sequence number mod 2^24; payload pattern seed (QP & 0xffff, frame number\n" \
	"  since --frame-start).  Malformed variants: ip truncated version length\n"         \
	"  geometry rocev2_icrc rocev2_opcode rocev2_va.\n"

/* Handle one of the options above; exits with a usage error on a bad value. */
void gi_sim_rocev2_option(struct gi_sim_cfg *c, int opt, const char *arg);
/* Set up stream `st` (format rocev2). 0, or -1 after a line on stderr. */
int gi_sim_rocev2_stream(struct gi_sim *sim, struct gi_sim_stream *st);
/* Build packet `p` (good or a malformed variant) at `u`, the UDP payload; its length, ICRC not yet set. */
uint32_t gi_sim_rocev2_build(const struct gi_sim *sim, const struct gi_sim_stream *st, const struct gi_sim_pkt *p,
			     uint8_t *u);
/* Once the Ethernet/IPv4/UDP headers are in place: UDP checksum 0, the ICRC (bad for that variant). */
void gi_sim_rocev2_finish(const struct gi_sim_pkt *p, uint8_t *frame, uint32_t len, uint32_t l3_off);

#endif /* GI_SIM_FMT_ROCEV2_H */
