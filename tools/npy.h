/*
 * Writing NumPy .npy files (format version 1.0): a magic string, a Python-dict header padded to a
 * multiple of 64 bytes, then the C-order data. Header-only, for the CLI and the test programs.
 */
#ifndef UFORM_TOOLS_NPY_H
#define UFORM_TOOLS_NPY_H

#include <stdio.h>
#include <string.h>

/* `descr` is NumPy's type string ("<f4", "<u2", "|i1", "|u1", "<i8"); `shape` has `rank` dims.
 * Answers 0 on success, -1 when the file cannot be written. */
static inline int npy_write(const char *path, const char *descr, const size_t *shape, size_t rank, const void *data,
                            size_t bytes) {
    char header[256];
    int length = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (size_t i = 0; i < rank; ++i)
        length += snprintf(header + length, sizeof header - (size_t)length, "%zu%s", shape[i],
                           rank == 1 ? "," : (i + 1 < rank ? ", " : ""));
    length += snprintf(header + length, sizeof header - (size_t)length, "), }");
    size_t total = 10 + (size_t)length + 1;
    size_t padded = (total + 63) / 64 * 64;
    FILE *file = fopen(path, "wb");
    if (!file) return -1;
    unsigned char prefix[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    size_t header_length = padded - 10;
    prefix[8] = (unsigned char)(header_length & 0xFF), prefix[9] = (unsigned char)(header_length >> 8);
    int ok = fwrite(prefix, 1, 10, file) == 10 && fwrite(header, 1, (size_t)length, file) == (size_t)length;
    for (size_t i = 10 + (size_t)length; ok && i + 1 < padded; ++i) ok = fputc(' ', file) != EOF;
    ok = ok && fputc('\n', file) != EOF;
    ok = ok && (bytes == 0 || fwrite(data, 1, bytes, file) == bytes);
    ok = (fclose(file) == 0) && ok;
    return ok ? 0 : -1;
}

#endif
