/*
 * sim_fmt_custom.h — gpuingest-sim's `custom` format: packets with a
 * user-described fixed header (the daemon's kernels/fmt_custom.h map).
 *
 * --custom "seq=0:4:be,frame=4:2:le,index=6:2:le,id=8:2:be,header=16" gives
 * each field as OFF:WIDTH:be|le[:MASK[:SHIFT]] and header=, offset= (payload
 * start, default header) and trailer= byte counts.  The header carries the
 * stream's seq, frame, packet index, stream id and timestamp (each shifted
 * left into its mask; bits outside the mask are filler the daemon must mask
 * off), the payload the gi_pattern_* bytes of (id or 0, frame or packet
 * number / packets), so gpuingest-frames verifies it byte by byte.
 *
 * Single-threaded: the sim's main thread only.
 */
#ifndef GI_SIM_FMT_CUSTOM_H
#define GI_SIM_FMT_CUSTOM_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/fmt_custom.h"
#include "sim_port.h"

struct gi_sim_custom {
	struct gi_fmt_custom_params map; /* masks resolved (never 0 for a present field) */
};

/*
 * Parse the stream's --custom spec (the nth custom stream takes spec n, the
 * last one repeats), check it against the stream's geometry, attach it to
 * `st` and note its overhead in sim->cfg.hdr_max.  0, or -1 after one line
 * on stderr.
 */
int gi_sim_custom_stream(struct gi_sim *sim, struct gi_sim_stream *st, uint32_t nth);

/* Parse one spec into `out` (for tests too).  0, or -1 with the problem in err. */
int gi_sim_custom_parse(const char *spec, struct gi_sim_custom *out, char *err, size_t len);

/* Write packet `p` of custom stream `st` as UDP payload at `u`; its length. */
uint32_t gi_sim_custom_build(const struct gi_sim_stream *st, const struct gi_sim_pkt *p, uint8_t *u,
			     uint64_t timestamp_ns);

#endif /* GI_SIM_FMT_CUSTOM_H */
