/* fuzz.h — what the libFuzzer targets share. */
#ifndef KEVO_FUZZ_H
#define KEVO_FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The input as a NUL-terminated string (caller frees); NULL when out of memory. */
static inline char *fz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text) {
        memcpy(text, data, size);
        text[size] = '\0';
    }
    return text;
}

#endif
