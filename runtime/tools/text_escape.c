/* text_escape.c - text from files another user may have written, made
 * safe to print on a terminal (text_escape.h). */
#include "text_escape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bytes of a UTF-8 character at p that is not a control (C1 included),
 * or 0 (a control, or not UTF-8). */
static size_t utf8_printable(const unsigned char *p)
{
    if (p[0] >= 0x20 && p[0] < 0x7f)
        return 1;
    size_t n = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
             : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    unsigned lo = p[0] == 0xe0 ? 0xa0 : p[0] == 0xf0 ? 0x90 : 0x80; /* not overlong */
    unsigned hi = p[0] == 0xed ? 0x9f : p[0] == 0xf4 ? 0x8f : 0xbf; /* no surrogate, <= U+10FFFF */
    if (n == 0 || p[1] < lo || p[1] > hi || (p[0] == 0xc2 && p[1] < 0xa0)) /* C1 controls */
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

/* s, malloc'd, with what a terminal could act on written as \xNN (control
 * bytes, DEL, C1 controls, bytes that are not UTF-8) and a backslash as
 * \\; NULL when out of memory. */
char *escaped(const char *s)
{
    char *out = malloc(4 * strlen(s) + 1), *o = out;
    const unsigned char *p = (const unsigned char *)s;
    while (out && *p) {
        size_t n = *p == '\\' ? 0 : utf8_printable(p);
        if (n == 0) {
            o += sprintf(o, *p == '\\' ? "\\\\" : "\\x%02x", *p);
            p++;
        } else {
            memcpy(o, p, n);
            o += n;
            p += n;
        }
    }
    if (out)
        *o = 0;
    return out;
}
