/*
 * Writing every byte of a buffer to a file descriptor, for the writers that stream into a
 * temporary file before they rename it (safetensors, .faiss, on-disk lists).
 */
#ifndef UFORM_CORE_WRITE_WHOLE_H
#define UFORM_CORE_WRITE_WHOLE_H

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

/* Writes `size` bytes from `bytes`, resuming after short writes and EINTR. Answers 0, or the errno
 * of the failed write (EIO when the system wrote nothing and gave no reason). */
static inline int uform__write_whole(int descriptor, const void *bytes, size_t size) {
    const unsigned char *at = bytes;
    while (size) {
        ssize_t done = write(descriptor, at, size);
        if (done < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (done == 0) return EIO;
        at += done, size -= (size_t)done;
    }
    return 0;
}

#endif
