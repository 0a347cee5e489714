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
	GI_SIM_OPT_HSB_FORM,
	GI_SIM_OPT_HSB_PAGES,
	GI_SIM_OPT_HSB_FIRST_PAGE,
	GI_SIM_OPT_HSB_PAGE_BYTES,
	GI_SIM_OPT_HSB_BAD_CRC,
	GI_SIM_OPT_HSB_MTU,
};

#define GI_SIM_ROCEV2_OPTIONS                                                  \
	{ "dst-qp", required_argument, NULL, GI_SIM_OPT_ROCEV2_DST_QP },       \
	{ "opcode", required_argument, NULL, GI_SIM_OPT_ROCEV2_OPCODE },       \
	{ "base-va", required_argument, NULL, GI_SIM_OPT_ROCEV2_BASE_VA },     \
	{ "hsb-form", required_argument, NULL, GI_SIM_OPT_HSB_FORM },          \
	{ "pages", required_argument, NULL, GI_SIM_OPT_HSB_PAGES },            \
	{ "first-page", required_argument, NULL, GI_SIM_OPT_HSB_FIRST_PAGE },  \
	{ "page-bytes", required_argument, NULL, GI_SIM_OPT_HSB_PAGE_BYTES },  \
	{ "bad-crc-every", required_argument, NULL, GI_SIM_OPT_HSB_BAD_CRC },  \
	{ "mtu", required_argument, NULL, GI_SIM_OPT_HSB_MTU }

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
	"  geometry rocev2_icrc rocev2_opcode rocev2_va.\n"                                   \
	"Holoscan Sensor Bridge streams (--format hsb): UC RDMA WRITE ONLY (0x2A) placed\n" \
	"by VA = base-va + page * page-bytes + offset, R_Key 0x1000 + i, PSN +1 per packet\n" \
	"across frames; the frame's last data packet carries the rest of --frame-bytes;\n"  \
	"a frame ends with a WRITE ONLY with immediate (0x2B), immediate = PSN << 12 |\n"   \
	"page, carrying HSB's 128-byte big-endian record (frame number, PTP times, CRC,\n"   \
	"bytes written).  --payload is HSB's ((MTU - 74) / 128) * 128 (1408 at 1500).\n"   \
	"  --hsb-form FORM         fpga (default: the record in a packet of its own at\n"  \
	"                          roundup(frame bytes, 128), its own PSN, 24-bit PSNs,\n" \
	"                          BTH resv 0) or emulator (HSB's software emulator:\n"   \
	"                          20-bit PSNs, BTH resv 0xFF, record CRC 0, a 32-bit\n"  \
	"                          frame number; the record appended to the last data\n"  \
	"                          packet, zero-padded to 128, when last + padding +\n"   \
	"                          128 + 4 + 128 <= payload, else a packet of its own as\n" \
	"                          the FPGA's: 1920x1080 RAW10 at MTU 1500)\n"            \
	"  --pages N               the host's pages, frames go round them (default 2)\n"  \
	"  --first-page P          the first frame's page (default 1)\n"                  \
	"  --page-bytes B          VA distance between pages (default roundup(frame\n"    \
	"                          bytes, 128) + 128, HSB's own page_inc)\n"            \
	"  --bad-crc-every N       every Nth frame's record carries a wrong frame CRC\n"  \
	"                          (fpga; the emulator's is always 0)\n"                 \
	"  --mtu M                 --payload as HSB derives it: ((M - 74) / 128) * 128\n" \
	"  Record: frame number (--frame-start + k) & 0xffff (emulator: 32 bits), start\n" \
	"  of frame PTP (1700000000 + k) s + k us, record time 1 ms later, CRC\n"          \
	"  ~crc32(frame) (zlib; emulator: 0), bytes written = frame bytes (k: frames\n"   \
	"  since the first).  Malformed variants:\n"                                       \
	"  ip truncated version length rocev2_icrc rocev2_opcode rocev2_va rocev2_rkey\n"  \
	"  rocev2_bounds.\n"

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
