/*
 * json.h — a JSON string literal on a stdio stream (host only).  The
 * daemon's --doctor and the tools' one-object reports print names that
 * come from configs and rings, so they escape quotes, backslashes and
 * control characters the same way.
 */
#ifndef GI_JSON_H
#define GI_JSON_H

#include <stdio.h>

static inline void gi_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

#endif /* GI_JSON_H */
