/*
 * fuzz_custom.c — the custom format's match and parse on hostile packets (see
 * fuzz_format.h for the input layout).  Test-only, single-threaded.
 */
#include "fuzz_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fz_format_one(GI_FORMAT_CUSTOM, data, size);
}
