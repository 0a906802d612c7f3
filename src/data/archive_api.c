/* libarchive's function table (archive_api.h), loaded by core/on_demand.c. */
#include <stddef.h>

#include "core/on_demand.h"
#include "data/archive_api.h"

static const uform__on_demand_library_t libraries[] = {
    {"libarchive.so.%u", 13, 0, NULL, 0},
};

#define SLOT(field) offsetof(uform__archive_t, field)
static const uform__on_demand_symbol_t symbols[] = {
    {0, "archive_read_new", SLOT(read_new)},
    {0, "archive_read_free", SLOT(read_free)},
    {0, "archive_read_support_format_tar", SLOT(read_support_format_tar)},
    {0, "archive_read_support_format_gnutar", SLOT(read_support_format_gnutar)},
    {0, "archive_read_support_filter_gzip", SLOT(read_support_filter_gzip)},
    {0, "archive_read_support_filter_none", SLOT(read_support_filter_none)},
    {0, "archive_read_open2", SLOT(read_open2)},
    {0, "archive_read_next_header2", SLOT(read_next_header2)},
    {0, "archive_read_data", SLOT(read_data)},
    {0, "archive_read_data_skip", SLOT(read_data_skip)},
    {0, "archive_errno", SLOT(errno_of)},
    {0, "archive_error_string", SLOT(error_string)},
    {0, "archive_set_error", SLOT(set_error)},
    {0, "archive_entry_new", SLOT(entry_new)},
    {0, "archive_entry_free", SLOT(entry_free)},
    {0, "archive_entry_filetype", SLOT(entry_filetype)},
    {0, "archive_entry_pathname", SLOT(entry_pathname)},
};
#undef SLOT

static uform__archive_t table;
static uform__on_demand_t loader = {
    .what = "libarchive 3 (Debian: libarchive13)",
    .directory_variable = "UFORM_ARCHIVE_DIR",
    .libraries = libraries,
    .library_count = 1,
    .symbols = symbols,
    .symbol_count = sizeof symbols / sizeof symbols[0],
    .table = &table,
};

uform_status_t uform__archive_require(const uform__archive_t **archive, const char *function, uform_outcome_t *outcome) {
    uform_status_t status = uform__on_demand_require(&loader, "shards", function, outcome);
    *archive = status == UFORM_OK ? &table : NULL;
    return status;
}
