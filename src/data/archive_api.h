/*
 * libarchive, loaded on first use (core/on_demand.h): reading shards is the only thing that needs it,
 * and Debian's libarchive.so.13 maps about 20 libraries (libxml2, ICU, libstdc++ …) that a process
 * which never opens a shard should not carry. The table holds the few functions src/data/ calls;
 * the types come from libarchive's headers at build time. From the folder named by UFORM_ARCHIVE_DIR
 * when it is set, else the system's search path. Private to libuform.
 */
#ifndef UFORM_DATA_ARCHIVE_API_H
#define UFORM_DATA_ARCHIVE_API_H

#include <archive.h>
#include <archive_entry.h>

#include "uform/uform.h"

typedef struct uform__archive_t {
    struct archive *(*read_new)(void);
    int (*read_free)(struct archive *);
    int (*read_support_format_tar)(struct archive *);
    int (*read_support_format_gnutar)(struct archive *);
    int (*read_support_filter_gzip)(struct archive *);
    int (*read_support_filter_none)(struct archive *);
    int (*read_open2)(struct archive *, void *, archive_open_callback *, archive_read_callback *, archive_skip_callback *,
                      archive_close_callback *);
    int (*read_next_header2)(struct archive *, struct archive_entry *);
    la_ssize_t (*read_data)(struct archive *, void *, size_t);
    int (*read_data_skip)(struct archive *);
    int (*errno_of)(struct archive *);
    const char *(*error_string)(struct archive *);
    void (*set_error)(struct archive *, int, const char *, ...);
    struct archive_entry *(*entry_new)(void);
    void (*entry_free)(struct archive_entry *);
    __LA_MODE_T (*entry_filetype)(struct archive_entry *);
    const char *(*entry_pathname)(struct archive_entry *);
} uform__archive_t;

/* The table, loading libarchive on the first call: UFORM_OK, or UFORM_UNSUPPORTED naming what is
 * missing (UFORM_OUT_OF_MEMORY when loading ran out of memory), on behalf of `function`. */
uform_status_t uform__archive_require(const uform__archive_t **archive, const char *function, uform_outcome_t *outcome);

#endif
