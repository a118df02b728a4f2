/* base_text.c - the strict decimal parser and the hex codec (see
 * base_text.h). */
#include "base_text.h"

int base_parse_decimal(const char **p, const char *end, int max_digits, uint64_t max,
                       uint64_t *v, int *width)
{
    const char *s = *p;
    uint64_t acc = 0;
    int digits = 0;
    while ((!end || s < end) && *s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if ((max_digits > 0 && digits == max_digits) || d > max || acc > (max - d) / 10)
            return -1;
        acc = acc * 10 + d;
        digits++;
        s++;
    }
    if (!digits)
        return -1;
    *v = acc;
    *p = s;
    if (width)
        *width = digits;
    return 0;
}

int base_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int base_hex_decode(const char *hex, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i++) {
        int hi = base_hex_digit(hex[2 * i]), lo = hi < 0 ? -1 : base_hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

char *base_hex_encode(const uint8_t *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
    return out;
}
