/*
 * The .npy reader (npy_read.h). The header is a Python dict literal as NumPy's
 * numpy.lib.format writes it: {'descr': '<f4', 'fortran_order': False, 'shape': (1000, 256), }.
 * Only its three keys are looked up, each value parsed strictly; the data must hold at least
 * rows·columns elements (more bytes than that is a foreign file too: refused).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npy_read.h"

/* The value after 'key': in the header, or NULL. */
static const char *value_of(const char *header, size_t length, const char *key) {
    char quoted[32];
    snprintf(quoted, sizeof quoted, "'%s'", key);
    size_t key_length = strlen(quoted);
    for (size_t at = 0; at + key_length <= length; ++at)
        if (memcmp(header + at, quoted, key_length) == 0) {
            const char *value = header + at + key_length;
            while (value < header + length && (*value == ' ' || *value == ':')) ++value;
            return value;
        }
    return NULL;
}

/* Parses "(r, c)" / "(n,)" / "()" into at most 8 dims; answers the rank or -1. */
static int parse_shape(const char *text, const char *end, size_t *dims) {
    if (text >= end || *text != '(') return -1;
    ++text;
    int rank = 0;
    for (;;) {
        while (text < end && *text == ' ') ++text;
        if (text < end && *text == ')') return rank;
        if (text >= end || *text < '0' || *text > '9' || rank == 8) return -1;
        size_t value = 0;
        while (text < end && *text >= '0' && *text <= '9') {
            if (value > (SIZE_MAX - 9) / 10) return -1;
            value = value * 10 + (size_t)(*text++ - '0');
        }
        dims[rank++] = value;
        while (text < end && *text == ' ') ++text;
        if (text < end && *text == ',') ++text;
        else if (!(text < end && *text == ')')) return -1;
    }
}

static int refuse(npy_matrix_t *matrix, char *error, size_t error_size, const char *format, const char *detail) {
    snprintf(error, error_size, format, detail);
    npy_matrix_close(matrix);
    return -1;
}

int npy_matrix_open(const char *path, npy_matrix_t *matrix, char *error, size_t error_size) {
    memset(matrix, 0, sizeof *matrix);
    int descriptor = open(path, O_RDONLY);
    if (descriptor < 0) return refuse(matrix, error, error_size, "cannot open: %s", strerror(errno));
    struct stat status;
    if (fstat(descriptor, &status) != 0 || !S_ISREG(status.st_mode)) {
        close(descriptor);
        return refuse(matrix, error, error_size, "%s", "not a regular file");
    }
    size_t size = (size_t)status.st_size;
    void *mapping = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, descriptor, 0) : MAP_FAILED;
    close(descriptor);
    if (size && mapping == MAP_FAILED) return refuse(matrix, error, error_size, "cannot map: %s", strerror(errno));
    if (size) matrix->mapping = mapping, matrix->mapping_size = size;
    const unsigned char *bytes = mapping;
    if (size < 10 || memcmp(bytes, "\x93NUMPY", 6) != 0)
        return refuse(matrix, error, error_size, "%s", "not a .npy file (no \\x93NUMPY magic): save it with numpy.save");
    unsigned major = bytes[6];
    size_t prefix = major == 1 ? 10 : 12;
    if (major < 1 || major > 3 || size < prefix)
        return refuse(matrix, error, error_size, "%s", ".npy format version is not 1, 2 or 3");
    size_t header_length = major == 1 ? (size_t)bytes[8] | (size_t)bytes[9] << 8
                                      : (size_t)bytes[8] | (size_t)bytes[9] << 8 | (size_t)bytes[10] << 16 | (size_t)bytes[11] << 24;
    if (header_length > size - prefix)
        return refuse(matrix, error, error_size, "%s", "truncated .npy header (the file ends inside it)");
    const char *header = (const char *)bytes + prefix, *end = header + header_length;
    const char *descr = value_of(header, header_length, "descr");
    const char *order = value_of(header, header_length, "fortran_order");
    const char *shape_text = value_of(header, header_length, "shape");
    if (!descr || !order || !shape_text)
        return refuse(matrix, error, error_size, "%s", "the .npy header lacks 'descr', 'fortran_order' or 'shape'");
    char dtype[16] = "";
    if (*descr == '\'') {
        size_t n = 0;
        for (++descr; descr < end && *descr != '\'' && n + 1 < sizeof dtype; ++descr) dtype[n++] = *descr;
        dtype[n] = '\0';
    }
    if (strcmp(dtype, "<f4") == 0) matrix->scalar = UFORM_SCALAR_F32;
    else if (strcmp(dtype, "<f2") == 0) matrix->scalar = UFORM_SCALAR_F16;
    else
        return refuse(matrix, error, error_size,
                      "dtype '%s': vectors must be float32 ('<f4') or float16 ('<f2'); convert with a.astype(numpy.float32)",
                      dtype[0] ? dtype : "(not a simple type)");
    if (strncmp(order, "False", 5) != 0)
        return refuse(matrix, error, error_size, "%s",
                      "the array is in Fortran (column-major) order: save numpy.ascontiguousarray(a) instead");
    size_t dims[8];
    int rank = parse_shape(shape_text, end, dims);
    if (rank < 0) return refuse(matrix, error, error_size, "%s", "the .npy header's 'shape' is not a tuple of integers");
    if (rank != 2) {
        char detail[32];
        snprintf(detail, sizeof detail, "%d", rank);
        return refuse(matrix, error, error_size, "the array has %s dimensions: vectors must be a 2-D [rows, columns] matrix",
                      detail);
    }
    size_t element = matrix->scalar == UFORM_SCALAR_F32 ? 4 : 2, data_at = prefix + header_length;
    if (dims[1] && dims[0] > (SIZE_MAX / element) / dims[1])
        return refuse(matrix, error, error_size, "%s", "the shape is too large");
    size_t need = dims[0] * dims[1] * element, have = size - data_at;
    if (have != need) {
        char detail[160];
        snprintf(detail, sizeof detail, "%zu data bytes for a [%zu, %zu] %s array, which needs %zu", have, dims[0], dims[1],
                 dtype, need);
        return refuse(matrix, error, error_size, have < need ? "truncated: %s" : "trailing bytes: %s", detail);
    }
    matrix->data = bytes + data_at, matrix->rows = dims[0], matrix->columns = dims[1];
    return 0;
}

void npy_matrix_close(npy_matrix_t *matrix) {
    if (matrix->mapping) munmap(matrix->mapping, matrix->mapping_size);
    memset(matrix, 0, sizeof *matrix);
}
