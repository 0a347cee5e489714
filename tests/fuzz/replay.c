/*
 * replay.c — main() for the replay build of a fuzz target: runs
 * LLVMFuzzerTestOneInput() once on every file in the directories (or
 * files) given, in name order.  The normal test suite runs it over the
 * target's checked-in corpus and crashes, with or without libFuzzer.
 *
 * A directory that does not exist is skipped (crashes/<target>/ appears
 * with the first crash); at least one input must have been replayed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	rewind(f);
	/* exactly len bytes on the heap, as libFuzzer passes them: ASan sees over-reads */
	uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
	size_t got = len > 0 ? fread(buf, 1, (size_t)len, f) : 0;
	fclose(f);
	if (got != (size_t)(len > 0 ? len : 0)) {
		fprintf(stderr, "replay: %s: short read\n", path);
		free(buf);
		return -1;
	}
	fprintf(stderr, "replay: %s (%ld bytes)\n", path, len);
	LLVMFuzzerTestOneInput(buf, (size_t)got);
	free(buf);
	return 0;
}

static int skip_name(const struct dirent *d)
{
	return d->d_name[0] != '.' && strcmp(d->d_name, "README.md") != 0;
}

int main(int argc, char **argv)
{
	unsigned n = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0) {
			printf("replay: %s: none (%s)\n", argv[i], strerror(errno));
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]) < 0)
				return 1;
			n++;
			continue;
		}
		struct dirent **names;
		int k = scandir(argv[i], &names, skip_name, alphasort);
		if (k < 0) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		for (int j = 0; j < k; j++) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], names[j]->d_name);
			if (replay_file(path) < 0)
				return 1;
			n++;
			free(names[j]);
		}
		free(names);
	}
	printf("replay: %u inputs, no crash\n", n);
	return n ? 0 : 1;
}
