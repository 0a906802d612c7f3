/*
 * The data targets hand their input to the library as a file, as a user's dataset would be: a
 * memory file (memfd_create) named by its /proc/self/fd path, so that a round costs no disk I/O (a
 * temporary file on the shared machines' disk made a round take milliseconds). The extension is
 * not part of that path; the readers decide by content.
 */
#ifndef UFORM_TESTS_FUZZ_DATA_FUZZ_FILE_H
#define UFORM_TESTS_FUZZ_DATA_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes `data` into the process's memory file; answers its path, or NULL (and the input is then
 * not run: a failure to make the file is not the parser's fault). */
static const char *data_fuzz_write(const uint8_t *data, size_t size) {
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("uform-fuzz", MFD_CLOEXEC);
        if (fd < 0) return NULL;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0) return NULL;
    size_t done = 0;
    while (done < size) {
        ssize_t wrote = pwrite(fd, data + done, size - done, (off_t)done);
        if (wrote <= 0) return NULL;
        done += (size_t)wrote;
    }
    return path;
}

#endif
