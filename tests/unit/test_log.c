/*
 * test_log.c — pmd_glue/log.c: one line per event with the level's name,
 * the journald `<N>` prefix when JOURNAL_STREAM is set, level filtering,
 * and repeat suppression: identical lines within a second are counted and
 * summarised once, at the repeated line's level, when another line comes;
 * the same line is shown again once the second has passed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "pmd_glue/log.h"

static char capture_path[] = "/tmp/gi_log_XXXXXX";
static int saved_stderr = -1;

/* Point fd 2 at a fresh file; the log writes there until captured(). */
static void capture(void)
{
	int fd = mkstemp(capture_path);
	assert_true(fd >= 0);
	fflush(stderr);
	saved_stderr = dup(2);
	assert_true(dup2(fd, 2) == 2);
	close(fd);
}

/* Restore stderr and return what was written (caller frees). */
static char *captured(void)
{
	fflush(stderr);
	assert_true(dup2(saved_stderr, 2) == 2);
	close(saved_stderr);
	FILE *f = fopen(capture_path, "r");
	assert_non_null(f);
	char *buf = calloc(1, 8192);
	size_t n = fread(buf, 1, 8191, f);
	buf[n] = '\0';
	fclose(f);
	unlink(capture_path);
	strcpy(capture_path, "/tmp/gi_log_XXXXXX");
	return buf;
}

static int count_lines(const char *t)
{
	int n = 0;
	for (; *t; t++)
		n += *t == '\n';
	return n;
}

static void test_level_names_and_filter(void **state)
{
	(void)state;
	unsetenv("JOURNAL_STREAM");
	gi_log_set_level(GI_LOG_INFO);
	capture();
	gi_log(GI_LOG_ERR, "port %s: start failed", "p0");
	gi_log(GI_LOG_WARNING, "a warning %d", 1);
	gi_log(GI_LOG_DEBUG, "not shown at level info");
	gi_log(GI_LOG_INFO, "ready");
	char *t = captured();
	assert_string_equal(t, "gpuingestd: error: port p0: start failed\n"
			       "gpuingestd: warning: a warning 1\n"
			       "gpuingestd: info: ready\n");
	free(t);
}

static void test_journald_prefix(void **state)
{
	(void)state;
	setenv("JOURNAL_STREAM", "8:12345", 1);
	capture();
	gi_log(GI_LOG_WARNING, "journald line one");
	gi_log(GI_LOG_ERR, "journald line two");
	char *t = captured();
	unsetenv("JOURNAL_STREAM");
	assert_string_equal(t, "<4>journald line one\n<3>journald line two\n");
	free(t);
}

static void test_repeats_summarised(void **state)
{
	(void)state;
	unsetenv("JOURNAL_STREAM");
	capture();
	for (int i = 0; i < 50; i++)
		gi_log(GI_LOG_WARNING, "port p0: rx queue 0 full");
	gi_log(GI_LOG_INFO, "something else");
	char *t = captured();
	assert_string_equal(t, "gpuingestd: warning: port p0: rx queue 0 full\n"
			       "gpuingestd: warning: last message repeated 49 more times\n"
			       "gpuingestd: info: something else\n");
	free(t);
}

static void test_repeat_shown_again_after_a_second(void **state)
{
	(void)state;
	unsetenv("JOURNAL_STREAM");
	capture();
	gi_log(GI_LOG_NOTICE, "tick");
	gi_log(GI_LOG_NOTICE, "tick");
	sleep(2); /* time() granularity: 2 s is always "a second later" */
	gi_log(GI_LOG_NOTICE, "tick");
	char *t = captured();
	assert_string_equal(t, "gpuingestd: notice: tick\n"
			       "gpuingestd: notice: last message repeated 1 more times\n"
			       "gpuingestd: notice: tick\n");
	assert_int_equal(count_lines(t), 3);
	free(t);
}

static void test_long_line_one_line(void **state)
{
	(void)state;
	char big[2000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	capture();
	gi_log(GI_LOG_ERR, "%s", big);
	char *t = captured();
	assert_int_equal(count_lines(t), 1); /* truncated, never split */
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_level_names_and_filter),
		cmocka_unit_test(test_journald_prefix),
		cmocka_unit_test(test_repeats_summarised),
		cmocka_unit_test(test_repeat_shown_again_after_a_second),
		cmocka_unit_test(test_long_line_one_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
