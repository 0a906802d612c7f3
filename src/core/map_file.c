/* Mapping a whole file read-only (map_file.h). */
#include "core/map_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/outcome.h"

uform_status_t uform__map_file(const char *path, const char *shown, const void **bytes, size_t *size,
                               uform_outcome_t *outcome, const char *function) {
    *bytes = NULL;
    *size = 0;
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return uform__fail(outcome, UFORM_IO, function, "cannot open %s: %s", shown, strerror(errno));
    struct stat facts;
    if (fstat(descriptor, &facts) != 0) {
        int error = errno;
        close(descriptor);
        return uform__fail(outcome, UFORM_IO, function, "cannot examine %s: %s", shown, strerror(error));
    }
    if (!S_ISREG(facts.st_mode)) {
        close(descriptor);
        return uform__fail(outcome, UFORM_IO, function, "cannot map %s: not a regular file%s", shown,
                           S_ISDIR(facts.st_mode) ? " (a folder)" : "");
    }
    if ((uint64_t)facts.st_size > (uint64_t)SIZE_MAX) {
        close(descriptor);
        return uform__fail(outcome, UFORM_IO, function, "cannot map %s: %s", shown, strerror(EFBIG));
    }
    size_t length = (size_t)facts.st_size;
    if (length) {
        void *mapping = mmap(NULL, length, PROT_READ, MAP_PRIVATE, descriptor, 0);
        if (mapping == MAP_FAILED) {
            int error = errno;
            close(descriptor);
            /* ENOMEM: no address space or memory left for the mapping, not a fault of the file. */
            return uform__fail(outcome, error == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_IO, function, "cannot map %s: %s", shown,
                               strerror(error));
        }
        *bytes = mapping;
    }
    close(descriptor);
    *size = length;
    return UFORM_OK;
}

void uform__unmap_file(const void *bytes, size_t size) {
    if (bytes && size) munmap((void *)bytes, size);
}
