/*
 * The PyTorch checkpoint reader (torch_file.h): maps the file, recognises its format (the legacy
 * one goes to torch_legacy.c, the oldest are refused), validates the archive (zip.c), runs
 * data.pkl (torch_pickle.c), resolves each storage to its `<archive>/data/<key>` entry, names the
 * tensors (torch_flatten.c) and builds the tensor table, copying the views that are not contiguous. The archive's layout is PyTorch's
 * (caffe2/serialize/inline_container.cc and torch/serialization.py): the folder is the first
 * entry's name up to its first '/', as PyTorchStreamReader takes it.
 */
#include "io/torch_file.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/map_file.h"
#include "core/outcome.h"
#include "io/open_mapped.h"
#include "io/safetensors_text.h"
#include "io/torch_pickle.h"
#include "io/zip.h"

struct uform__torch_file_t {
    uform__io_source_t source; /* the whole file or borrowed buffer; first (open_mapped.h) */
    uform__safetensors_tensor_t *tensors; /* `count`, sorted by name */
    size_t count;
    char *names;           /* every name, NUL-terminated, one allocation */
    uint8_t *copies;       /* the copied views, one allocation */
    size_t copies_size;
};

/* What the copies of non-contiguous views may take together, at least (torch_file.h). */
#define COPY_FLOOR ((uint64_t)64 << 20)

static const char function[] = "uform__torch_open";

/* The first bytes of files PyTorch wrote in its older formats: sets `*legacy` for the one this
 * reader reads (torch_legacy.c), refuses the others. */
static uform_status_t recognise_legacy(const uint8_t *bytes, size_t size, int *legacy, uform_outcome_t *outcome) {
    /* torch.save before 1.6 (or with _use_new_zipfile_serialization=False) starts with a pickle
     * of the magic number 0x1950a86a20f9469cfc6c: PROTO, a FRAME from protocol 4 on, then LONG1 of
     * 10 bytes, little-endian. */
    static const uint8_t magic[] = {0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
    size_t at = size >= 11 && bytes[0] == 0x80 && bytes[2] == 0x95 ? 11 : 2; /* PROTO n, FRAME and its length */
    *legacy = size >= at + sizeof magic && bytes[0] == 0x80 && memcmp(bytes + at, magic, sizeof magic) == 0;
    if (*legacy) return UFORM_OK;
    if (size >= 8 && memcmp(bytes, "PYTORCH1", 8) == 0)
        return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                           "this is the archive format of PyTorch's 1.0 preview, which PyTorch itself no longer reads");
    if (size >= 262 && memcmp(bytes + 257, "ustar", 5) == 0)
        return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                           "this is a tar archive, the torch.save format of PyTorch 0.3 and earlier; load it with torch "
                           "and save it again");
    if (size >= 1 && bytes[0] == 0x80)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "this is a bare pickle without torch.save's magic number, not a torch.save file");
    return UFORM_OK;
}

/* What one open keeps while it builds the file. */
typedef struct reader_t {
    const uint8_t *bytes;
    size_t size;
    uform_outcome_t *outcome;
    uform__zip_t *zip;
    const char *folder;           /* the first entry's name; the folder is its first `folder_length` bytes */
    size_t folder_length;
    char *scratch;                /* a record name being looked up */
    size_t scratch_capacity;
    uform__torch_machine_t machine;
    uform__torch_entry_t *entries; /* the flattened names, then sorted by them */
    size_t entry_count;
    char *names;
    uint64_t *storage_data;       /* per storage: the file byte of its first element */
    uint64_t *copy_at;            /* per view: its copy's offset in the copies, UINT64_MAX if mapped */
    char source[UFORM__SAFETENSORS_QUOTE_CAPACITY + 8]; /* "entry 'archive/data.pkl'" */
} reader_t;

/* The entry `<folder>/<suffix>` (spelled into reader->scratch, also on a miss), or NULL. */
static uform_status_t find_record(reader_t *reader, const char *suffix, size_t suffix_length,
                                  const uform__zip_entry_t **entry) {
    size_t needed = reader->folder_length + suffix_length + 2;
    if (needed > reader->scratch_capacity) {
        char *bigger = realloc(reader->scratch, needed);
        if (!bigger)
            return uform__fail(reader->outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a record name of %zu bytes",
                               needed);
        reader->scratch = bigger;
        reader->scratch_capacity = needed;
    }
    memcpy(reader->scratch, reader->folder, reader->folder_length);
    reader->scratch[reader->folder_length] = '/';
    memcpy(reader->scratch + reader->folder_length + 1, suffix, suffix_length);
    reader->scratch[reader->folder_length + 1 + suffix_length] = 0;
    *entry = uform__zip_find(reader->zip, reader->scratch);
    return UFORM_OK;
}

/* The bytes of a record that must be stored, not compressed. */
static uform_status_t stored_bytes(const reader_t *reader, const uform__zip_entry_t *entry, const uint8_t **data) {
    char quoted[UFORM__SAFETENSORS_QUOTE_CAPACITY];
    if (entry->method != 0)
        return uform__fail(reader->outcome, UFORM_UNSUPPORTED, function,
                           "entry %s is compressed (method %u); torch.save stores its entries uncompressed",
                           uform__safetensors_quote(quoted, entry->name), entry->method);
    *data = reader->bytes + entry->data_offset;
    return UFORM_OK;
}

/* Everything about the archive before the pickle runs: folder, format, byte order, data.pkl. */
static uform_status_t read_archive(reader_t *reader, const uform__zip_entry_t **pickle) {
    char quoted[UFORM__SAFETENSORS_QUOTE_CAPACITY];
    uform_outcome_t *outcome = reader->outcome;
    if (uform__zip_count(reader->zip) == 0)
        return uform__fail(outcome, UFORM_FORMAT, function, "the archive holds no entries");
    reader->folder = uform__zip_at(reader->zip, 0)->name;
    const char *slash = strchr(reader->folder, '/');
    if (!slash)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "the first entry %s is not inside a folder; torch.save puts every record under '<archive>/'",
                           uform__safetensors_quote(quoted, reader->folder));
    reader->folder_length = (size_t)(slash - reader->folder);
    const uform__zip_entry_t *entry = NULL;
    uform_status_t status = find_record(reader, "constants.pkl", 13, &entry);
    if (status != UFORM_OK) return status;
    if (entry)
        return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                           "this is a TorchScript archive (torch.jit.save: it holds %s); load it with torch and "
                           "torch.save its state_dict()",
                           uform__safetensors_quote(quoted, entry->name));
    if ((status = find_record(reader, "byteorder", 9, &entry)) != UFORM_OK) return status;
    if (entry) {
        const uint8_t *text = NULL;
        if ((status = stored_bytes(reader, entry, &text)) != UFORM_OK) return status;
        if (entry->size == 3 && memcmp(text, "big", 3) == 0)
            return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                               "entry %s says the tensors are big-endian; only little-endian files are read",
                               uform__safetensors_quote(quoted, entry->name));
        if (entry->size != 6 || memcmp(text, "little", 6) != 0)
            return uform__fail(outcome, UFORM_FORMAT, function, "entry %s holds neither 'little' nor 'big'",
                               uform__safetensors_quote(quoted, entry->name));
    }
    if ((status = find_record(reader, "data.pkl", 8, pickle)) != UFORM_OK) return status;
    if (!*pickle)
        return uform__fail(outcome, UFORM_FORMAT, function, "the archive has no entry %s",
                           uform__safetensors_quote(quoted, reader->scratch));
    const uint8_t *data = NULL;
    if ((status = stored_bytes(reader, *pickle, &data)) != UFORM_OK) return status;
    /* A CRC of 0 is what a writer that skips the checksum (torch.serialization's
     * compute_crc32=False) leaves; any other must match. */
    uint32_t crc = uform__zip_crc32(0, data, (size_t)(*pickle)->size);
    if ((*pickle)->crc32 != 0 && crc != (*pickle)->crc32)
        return uform__fail(outcome, UFORM_FORMAT, function,
                           "entry %s fails its CRC-32 check (0x%08" PRIx32 " recorded, 0x%08" PRIx32 " computed)",
                           uform__safetensors_quote(quoted, (*pickle)->name), (*pickle)->crc32, crc);
    return UFORM_OK;
}

/* Each storage's entry `<folder>/data/<key>`: present, stored, and large enough for its elements;
 * `storage_data` gets the entry's first data byte. */
static uform_status_t resolve_storages(reader_t *reader) {
    const uform__torch_machine_t *machine = &reader->machine;
    reader->storage_data = malloc((machine->storage_count ? machine->storage_count : 1) * sizeof *reader->storage_data);
    if (!reader->storage_data)
        return uform__fail(reader->outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate %u storage offsets",
                           machine->storage_count);
    char quoted[UFORM__SAFETENSORS_QUOTE_CAPACITY], key[UFORM__SAFETENSORS_QUOTE_CAPACITY];
    for (uint32_t index = 0; index < machine->storage_count; ++index) {
        const uform__torch_storage_t *storage = &machine->storages[index];
        char *suffix = malloc((size_t)storage->key_length + 6);
        if (!suffix)
            return uform__fail(reader->outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a storage name of %u bytes",
                               storage->key_length);
        memcpy(suffix, "data/", 5);
        memcpy(suffix + 5, machine->bytes + storage->key_offset, storage->key_length);
        const uform__zip_entry_t *entry = NULL;
        uform_status_t status = find_record(reader, suffix, (size_t)storage->key_length + 5, &entry);
        free(suffix);
        if (status != UFORM_OK) return status;
        const char *source = machine->source;
        if (!entry)
            return uform__fail(reader->outcome, UFORM_FORMAT, function,
                               "%s, pickle byte %zu: the persistent id names storage %s, but the archive has no "
                               "entry %s",
                               source, storage->at,
                               uform__torch_quote_bytes(machine->bytes + storage->key_offset, storage->key_length, key),
                               uform__safetensors_quote(quoted, reader->scratch));
        const uint8_t *data = NULL;
        if ((status = stored_bytes(reader, entry, &data)) != UFORM_OK) return status;
        uint64_t needed;
        if (__builtin_mul_overflow(storage->numel, (uint64_t)uform__torch_element_size(storage->dtype), &needed) || needed > entry->size)
            return uform__fail(reader->outcome, UFORM_FORMAT, function,
                               "%s, pickle byte %zu: the persistent id gives %" PRIu64 " elements of %zu bytes, "
                               "more than the %" PRIu64 " bytes of entry %s",
                               source, storage->at, storage->numel, uform__torch_element_size(storage->dtype), entry->size,
                               uform__safetensors_quote(quoted, entry->name));
        reader->storage_data[index] = entry->data_offset;
    }
    return UFORM_OK;
}

/* Row-major with unit steps, ignoring the stride of size-1 axes (as Tensor.is_contiguous does). */
static int contiguous(const uform__torch_view_t *view) {
    uint64_t expected = 1;
    for (uint32_t axis = view->rank; axis-- > 0;) {
        if (view->shape[axis] != 1 && view->stride[axis] != expected) return 0;
        expected *= view->shape[axis];
    }
    return 1;
}

/* Copies a non-empty strided view into `out`, row-major; rows along the last axis at a time. */
static void gather(uint8_t *out, const uint8_t *storage, const uform__torch_view_t *view, size_t size) {
    uint32_t last = view->rank - 1; /* rank >= 1: a scalar is always contiguous */
    uint64_t index[UFORM__SAFETENSORS_MAX_RANK] = {0};
    uint64_t row = view->shape[last], rows = view->element_count / row;
    for (uint64_t done = 0; done < rows; ++done) {
        uint64_t at = view->offset;
        for (uint32_t axis = 0; axis < last; ++axis) at += index[axis] * view->stride[axis];
        if (view->stride[last] == 1) {
            memcpy(out, storage + at * size, (size_t)(row * size));
            out += row * size;
        } else {
            for (uint64_t column = 0; column < row; ++column, out += size)
                memcpy(out, storage + (at + column * view->stride[last]) * size, size);
        }
        for (uint32_t axis = last; axis-- > 0;) { /* the next row: an odometer over the outer axes */
            if (++index[axis] < view->shape[axis]) break;
            index[axis] = 0;
        }
    }
}

static int compare_entries(const void *left, const void *right, void *names) {
    return strcmp((const char *)names + ((const uform__torch_entry_t *)left)->name,
                  (const char *)names + ((const uform__torch_entry_t *)right)->name);
}

/* Sorts the names, then makes one record per name: mapped, or copied once per view. */
static uform_status_t build_table(reader_t *reader, uform__torch_file_t *file) {
    const uform__torch_machine_t *machine = &reader->machine;
    uform_outcome_t *outcome = reader->outcome;
    char quoted[UFORM__SAFETENSORS_QUOTE_CAPACITY];
    if (reader->entry_count > 1)
        qsort_r(reader->entries, reader->entry_count, sizeof *reader->entries, compare_entries, reader->names);
    for (size_t index = 1; index < reader->entry_count; ++index) {
        const char *name = reader->names + reader->entries[index].name;
        if (strcmp(reader->names + reader->entries[index - 1].name, name) == 0)
            return uform__fail(outcome, UFORM_FORMAT, function, "two entries of the state dict are both named %s",
                               uform__safetensors_quote(quoted, name));
    }
    file->tensors = calloc(reader->entry_count ? reader->entry_count : 1, sizeof *file->tensors);
    reader->copy_at = malloc((machine->view_count ? machine->view_count : 1) * sizeof *reader->copy_at);
    if (!file->tensors || !reader->copy_at)
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate the table of %zu tensors",
                           reader->entry_count);
    for (uint32_t view = 0; view < machine->view_count; ++view) reader->copy_at[view] = UINT64_MAX;
    uint64_t copies = 0, limit = reader->size > COPY_FLOOR ? reader->size : COPY_FLOOR;
    for (size_t index = 0; index < reader->entry_count; ++index) {
        const char *name = reader->names + reader->entries[index].name;
        uint32_t view_index = reader->entries[index].view;
        const uform__torch_view_t *view = &machine->views[view_index];
        uform__safetensors_dtype_t dtype = machine->storages[view->storage].dtype;
        if (dtype == UFORM__TORCH_I16)
            return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                               "tensor %s is int16 (torch.ShortStorage), which has no dtype here",
                               uform__safetensors_quote(quoted, name));
        if (!view->element_count || contiguous(view) || reader->copy_at[view_index] != UINT64_MAX) continue;
        uint64_t bytes;
        if (__builtin_mul_overflow(view->element_count, (uint64_t)uform__torch_element_size(dtype), &bytes) ||
            __builtin_add_overflow(copies, bytes, &copies) || copies > limit)
            return uform__fail(outcome, UFORM_UNSUPPORTED, function,
                               "tensor %s is a non-contiguous view of %" PRIu64 " elements, and copying it would pass "
                               "the %" PRIu64 "-byte limit on copies; save it with .contiguous()",
                               uform__safetensors_quote(quoted, name), view->element_count, limit);
        reader->copy_at[view_index] = copies - bytes;
    }
    if (copies) {
        file->copies = malloc((size_t)copies);
        if (!file->copies)
            return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function,
                               "cannot allocate %" PRIu64 " bytes for the copies of non-contiguous tensors", copies);
        file->copies_size = (size_t)copies;
    }
    for (uint32_t view = 0; view < machine->view_count; ++view) {
        if (reader->copy_at[view] == UINT64_MAX) continue;
        const uform__torch_view_t *source = &machine->views[view];
        const uform__torch_storage_t *storage = &machine->storages[source->storage];
        gather(file->copies + reader->copy_at[view], reader->bytes + reader->storage_data[source->storage], source,
               uform__torch_element_size(storage->dtype));
    }
    for (size_t index = 0; index < reader->entry_count; ++index) {
        uint32_t view_index = reader->entries[index].view;
        const uform__torch_view_t *view = &machine->views[view_index];
        uform__safetensors_tensor_t *tensor = &file->tensors[index];
        tensor->name = reader->names + reader->entries[index].name;
        tensor->dtype = machine->storages[view->storage].dtype;
        tensor->rank = view->rank;
        memcpy(tensor->shape, view->shape, sizeof tensor->shape);
        tensor->element_count = view->element_count;
        tensor->length = view->element_count * uform__torch_element_size(tensor->dtype);
        uint64_t base = reader->storage_data[view->storage];
        if (reader->copy_at[view_index] != UINT64_MAX) {
            tensor->offset = UINT64_MAX;
            tensor->data = file->copies + reader->copy_at[view_index];
        } else {
            tensor->offset = view->element_count ? base + view->offset * uform__torch_element_size(tensor->dtype) : base;
            tensor->data = reader->bytes + tensor->offset;
        }
    }
    file->count = reader->entry_count;
    return UFORM_OK;
}

/* Validates `file->source.bytes[0..size)` and fills its table. On failure the caller closes `file`. */
static uform_status_t parse_file(void *record, uform_outcome_t *outcome) {
    uform__torch_file_t *file = record;
    reader_t reader;
    memset(&reader, 0, sizeof reader);
    reader.bytes = file->source.bytes;
    reader.size = file->source.size;
    reader.outcome = outcome;
    const uform__zip_entry_t *pickle = NULL;
    int legacy = 0;
    uform_status_t status = recognise_legacy(file->source.bytes, file->source.size, &legacy, outcome);
    if (status == UFORM_OK && legacy) {
        status = uform__torch_legacy_read(file->source.bytes, file->source.size, &reader.machine, &reader.storage_data, outcome);
    } else if (status == UFORM_OK) {
        status = uform__zip_open(file->source.bytes, file->source.size, &reader.zip, outcome);
        if (status == UFORM_OK) status = read_archive(&reader, &pickle);
        if (status == UFORM_OK) {
            char quoted[UFORM__SAFETENSORS_QUOTE_CAPACITY];
            snprintf(reader.source, sizeof reader.source, "entry %s", uform__safetensors_quote(quoted, pickle->name));
            reader.machine.origin = (size_t)pickle->data_offset;
            status = uform__torch_pickle_run(&reader.machine, file->source.bytes + pickle->data_offset, (size_t)pickle->size,
                                             reader.source, outcome);
        }
        if (status == UFORM_OK) status = resolve_storages(&reader);
    }
    if (status == UFORM_OK)
        status = uform__torch_flatten(&reader.machine, &reader.entries, &reader.entry_count, &reader.names);
    if (status == UFORM_OK) status = build_table(&reader, file);
    if (status == UFORM_OK) {
        file->names = reader.names;
        reader.names = NULL;
    }
    uform__torch_pickle_free(&reader.machine);
    uform__zip_close(reader.zip);
    free(reader.scratch);
    free(reader.entries);
    free(reader.names);
    free(reader.storage_data);
    free(reader.copy_at);
    return status;
}

void uform__torch_close(uform__torch_file_t *file) {
    if (!file) return;
    uform__unmap_file(file->source.mapping, file->source.size);
    free(file->tensors);
    free(file->names);
    free(file->copies);
    free(file);
}

static void close_record(void *record) { uform__torch_close(record); }

static const uform__io_reader_t opener = {
    .record_size = sizeof(uform__torch_file_t),
    .parse = parse_file,
    .close = close_record,
    .function = function, /* also for the archive's and the pickle machine's failures */
};

uform_status_t uform__torch_open_memory(const void *bytes, size_t size, uform__torch_file_t **file,
                                        uform_outcome_t *outcome) {
    void *record = NULL;
    uform_status_t status = uform__io_open_bytes(&opener, bytes, size, file ? &record : NULL, outcome, __func__);
    if (file) *file = record;
    return status;
}

uform_status_t uform__torch_open(const char *path, uform__torch_file_t **file, uform_outcome_t *outcome) {
    void *record = NULL;
    uform_status_t status = uform__io_open_path(&opener, path, file ? &record : NULL, outcome, __func__);
    if (file) *file = record;
    return status;
}

size_t uform__torch_count(const uform__torch_file_t *file) { return file ? file->count : 0; }

const uform__safetensors_tensor_t *uform__torch_at(const uform__torch_file_t *file, size_t index) {
    if (!file || index >= file->count) return NULL;
    return &file->tensors[index];
}

const uform__safetensors_tensor_t *uform__torch_find(const uform__torch_file_t *file, const char *name) {
    if (!file || !name) return NULL;
    return uform__tensors_find_sorted(file->tensors, file->count, name);
}

int uform__torch_mapped(const uform__torch_file_t *file, const uform__safetensors_tensor_t *tensor) {
    return file && tensor && tensor->offset != UINT64_MAX;
}

const uint8_t *uform__torch_bytes(const uform__torch_file_t *file, size_t *size) {
    if (size) *size = file ? file->source.size : 0;
    return file ? file->source.bytes : NULL;
}
