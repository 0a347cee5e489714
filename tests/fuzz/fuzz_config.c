/*
 * fuzz_config.c — the config loader (daemon/config.c: libyaml, the key
 * table, every cross-check) on hostile YAML, and the reload comparison of
 * what loaded against config/demo.yaml.  Test-only, single-threaded.
 *
 * Input: the YAML text (not NUL-terminated).  Whatever it holds, the
 * loader returns 0 or -EINVAL with at least one error, and frees all it
 * allocated (LeakSanitizer checks).
 */
#include <errno.h>

#include "daemon/config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gi_config cfg, base;
	static int have_base = -1;
	unsigned n_errors = 0;

	if (have_base < 0) {
		unsigned n = 0;
		have_base = gi_config_load(GI_FUZZ_BASE_CONFIG, &base, NULL, &n) == 0;
		if (!have_base)
			fprintf(stderr, "fuzz_config: %s does not load; reload comparison not fuzzed\n",
				GI_FUZZ_BASE_CONFIG);
	}
	int rc = gi_config_load_string("fuzz.yaml", (const char *)data, size, &cfg, NULL, &n_errors);
	FZ_CHECK(rc == 0 || rc == -EINVAL);
	FZ_CHECK(rc == 0 ? n_errors == 0 : n_errors > 0);
	if (rc == 0 && have_base)
		(void)gi_config_restart_needed(&base, &cfg, NULL);
	gi_config_free(&cfg);
	return 0;
}
