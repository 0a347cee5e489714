/*
 * test_copy_device.cpp — the device path of gi_copy_lanes() (kernels/frame.h),
 * compiled for the host against the CUDA emulation header, with 32 lanes
 * played in turn.
 *
 * For every source alignment 0..15, destination offsets 0/4/8/16 and
 * lengths 0..300 plus a few frame-sized ones (those at 32, 8, 4 and 1
 * lanes, around the ends of the unrolled loops too), the copy must put exactly the
 * source bytes in [dst, dst + len) and nothing outside.  The source ends
 * exactly at a page followed by a PROT_NONE guard page, or starts 64 bytes
 * after the previous one, so a load of a block wholly outside the source
 * (the shifting path reads the aligned 16-byte blocks that hold a chunk's
 * bytes) faults here instead of reading another buffer's bytes on a GPU.
 */
#include "cuda_emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernels/frame.h"

static int failures;

static void check(bool ok, const char *what, uint32_t sa, uint32_t da, uint32_t len)
{
	if (!ok && failures++ < 20)
		fprintf(stderr, "FAIL: %s (src align %u, dst offset %u, len %u)\n", what, sa, da, len);
}

int main(void)
{
	const size_t pg = (size_t)sysconf(_SC_PAGESIZE), span = 4 * pg;
	/* guard | source pages | guard */
	uint8_t *m = (uint8_t *)mmap(NULL, span + 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 99;
	mprotect(m, pg, PROT_NONE);
	mprotect(m + pg + span, pg, PROT_NONE);
	uint8_t *lo = m + pg, *hi = lo + span;
	for (size_t i = 0; i < span; i++)
		lo[i] = (uint8_t)(i * 131u + 7u);
	uint8_t *dbuf = (uint8_t *)aligned_alloc(64, 16384 + 128);
	/*
	 * Frame sizes, and the ends of the unrolled groups (frame.h: eight
	 * chunks in flight aligned, then four; four shifted, then two): at 32
	 * lanes a lane's 2nd, 4th and 8th chunk end at 528, 1552 and 3600, the
	 * next group's first at 4112; at 8 and 4 lanes (a step of 128 or 64
	 * bytes) around 144, 400, 912 and 80, 208, 464.
	 */
	static const uint32_t big[] = { 1024, 1500 - 74, 4000, 8192, 527,  528,  531,  532,  1551, 1552, 1555, 1556,
					2047, 2048, 2049, 2575, 2576, 3599, 3600, 3601, 3616, 4111, 4112, 5647,
					5648, 7695, 7696, 79,   80,   81,   143,  144,  207,  208,  209,  399,
					400,  463,  464,  465,  911,  912,  913 };
	const uint32_t n_big = sizeof(big) / sizeof(big[0]);
	static const uint32_t dsts[] = { 0, 4, 8, 16 };
	uint32_t cases = 0, funnel = 0;

	for (uint32_t sa = 0; sa < 16; sa++)
		for (uint32_t di = 0; di < 4; di++)
			for (uint32_t li = 0; li < 301 + n_big; li++) {
				uint32_t len = li < 301 ? li : big[li - 301], da = dsts[di];
				for (int end = 0; end < 2; end++)
				for (uint32_t nli = 0; nli < (li < 301 ? 1u : 4u); nli++) { /* big ones at 8, 4 and 1 lanes too */
					static const uint32_t lanes[] = { 32, 8, 4, 1 };
					const uint32_t nl = lanes[nli];
					/* the source against the upper guard, or 16-aligned-plus-sa after the lower one */
					const uint8_t *src = end ? hi - len : lo + 64 + sa;
					if (end && ((uintptr_t)src & 15) != sa)
						continue; /* only the alignment under test */
					uint8_t *dst = dbuf + 64 + da;
					memset(dbuf, 0xEE, 16384 + 128);
					for (uint32_t lane = 0; lane < nl; lane++)
						gi_copy_lanes(dst, src, len, lane, nl);
					check(memcmp(dst, src, len) == 0, "bytes differ", sa, da, len);
					bool clean = true;
					for (uint32_t i = 0; i < 64 + da; i++)
						clean &= dbuf[i] == 0xEE;
					for (uint32_t i = 64 + da + len; i < 16384 + 128; i++)
						clean &= dbuf[i] == 0xEE;
					check(clean, "wrote outside [dst, dst + len)", sa, da, len);
					cases++;
					funnel += sa != 0 && da % 16 == 0 && len >= 16;
				}
			}
	printf("%u copies (%u through the shifting path), %d failure(s)\n", cases, funnel, failures);
	free(dbuf);
	munmap(m, span + 2 * pg);
	return failures ? 1 : 0;
}
