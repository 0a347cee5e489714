/*
 * crc_host.c — CRC-32 (IEEE, reflected, zlib's) over many bytes on the
 * host: a frame's CRC for rocev2.frame_crc (fmt_rocev2.h).
 *
 * ISA-L's folding CRC (PCLMULQDQ) when the build found libisal, else
 * zlib's.  Measured on the development VM, one 2,592,000-byte frame, hot:
 * ISA-L 64 GB/s, zlib 6.8 GB/s (bench/README.md, "Frame CRC").  Both
 * compute ~R(~init) over the bytes, R the raw register; the executor
 * works with R itself.
 */
#include <stdint.h>

#include "fmt_rocev2.h"

#if defined(GI_CRC_ISAL)
#include <isa-l/crc.h>
#define GI_CRC_CHUNK (1ull << 30)
static uint32_t crc_lib(uint32_t crc, const uint8_t *p, uint64_t n)
{
	return crc32_gzip_refl(crc, (unsigned char *)(uintptr_t)p, n);
}
#else
#include <zlib.h>
#define GI_CRC_CHUNK (1ull << 30) /* zlib takes uInt lengths */
static uint32_t crc_lib(uint32_t crc, const uint8_t *p, uint64_t n)
{
	return (uint32_t)crc32(crc, p, (uInt)n);
}
#endif

uint32_t gi_crc32_host(uint32_t reg, const uint8_t *p, uint64_t n)
{
	uint32_t crc = ~reg; /* the libraries' convention: the register inverted on both sides */
	while (n) {
		uint64_t k = n < GI_CRC_CHUNK ? n : GI_CRC_CHUNK;
		crc = crc_lib(crc, p, k);
		p += k;
		n -= k;
	}
	return ~crc;
}

const char *gi_crc32_host_impl(void)
{
#if defined(GI_CRC_ISAL)
	return "isa-l";
#else
	return "zlib";
#endif
}
