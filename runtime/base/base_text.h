/* base_text.h - the strict decimal parser and the hex codec every layer
 * shares: numbers as Slurm and the user write them (digits only: no sign,
 * no spaces, no base prefix) and bytes as hex digits. They say only whether
 * the text was good; each caller words its own error. */
#ifndef COHORT_BASE_TEXT_H
#define COHORT_BASE_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Reads the unsigned decimal number at *p, up to end (NULL: up to the
 * string's end): at least one digit, at most max_digits of them (0: any
 * number of them) and a value at most max. 0 with *v, *p past the digits
 * and, when width is not NULL, *width the count of digits (leading zeros
 * included); -1 (nothing changed) when the text is not such a number. What
 * follows the digits is the caller's to check. */
int base_parse_decimal(const char **p, const char *end, int max_digits, uint64_t max,
                       uint64_t *v, int *width);

/* The value of hex digit c (0-9, a-f, A-F), or -1. */
int base_hex_digit(char c);

/* Decodes the 2 * n hex digits at hex into out[0..n): 0, or -1 when one of
 * them is not a hex digit (out is then partly written). */
int base_hex_decode(const char *hex, size_t n, uint8_t *out);

/* Writes in[0..n) as 2 * n lowercase hex digits and a NUL into out (room
 * for 2 * n + 1); returns out. */
char *base_hex_encode(const uint8_t *in, size_t n, char *out);

#endif
