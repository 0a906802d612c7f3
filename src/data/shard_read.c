/*
 * One WebDataset shard, streamed through libarchive (ustar, pax and GNU long names; gzip): members
 * are grouped into samples by key — the member's path up to the first dot of its file name, so
 * "a/000012.jpg", "a/000012.txt" and "a/000012.json" are one sample "a/000012" — exactly as
 * WebDataset's tar iterator groups them. A sample's text is its .txt member (one trailing line break
 * dropped), else its .json member's "caption" or "text"; its medium the one member whose extension
 * names an image, video or recording (uform__data_modality_of_name). Other members are passed over.
 * Only one member's bytes are in memory at a time besides the sample being assembled.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/outcome.h"
#include "data/data.h"
#include "io/json.h"

static double now_seconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + (double)time.tv_nsec * 1e-9;
}

void uform__shard_sample_free(uform__shard_sample_t *sample) {
    if (!sample) return;
    free(sample->key), free(sample->member), free(sample->bytes), free(sample->text), free(sample->message);
    memset(sample, 0, sizeof *sample);
    sample->modality = -1;
}

uform_status_t uform__shard_open(uform__shard_reader_t *reader, const char *path, size_t shard, size_t max_bytes,
                                 uform_outcome_t *outcome, const char *function) {
    memset(reader, 0, sizeof *reader);
    reader->path = path, reader->shard = shard, reader->max_bytes = max_bytes;
    struct archive *archive = archive_read_new();
    if (!archive) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot start reading the shard '%s'", path);
    archive_read_support_format_tar(archive);
    archive_read_support_format_gnutar(archive);
    archive_read_support_filter_gzip(archive);
    archive_read_support_filter_none(archive);
    double start = now_seconds();
    if (archive_read_open_filename(archive, path, 1 << 16) != ARCHIVE_OK) {
        int error = archive_errno(archive);
        const char *why = archive_error_string(archive);
        uform_status_t status = error == ENOMEM ? UFORM_OUT_OF_MEMORY : error == ENOENT || error == EACCES ? UFORM_IO : UFORM_FORMAT;
        status = uform__fail(outcome, status, function, "shard %zu '%s': %s", shard, path,
                             why ? why : error ? strerror(error) : "not a tar archive");
        archive_read_free(archive);
        return status;
    }
    reader->seconds += now_seconds() - start;
    reader->archive = archive;
    return UFORM_OK;
}

void uform__shard_close(uform__shard_reader_t *reader) {
    if (reader->archive) archive_read_free(reader->archive);
    free(reader->pending_name);
    reader->archive = NULL, reader->pending_name = NULL;
}

/* The key of a member name: its path up to the first dot of its file name (the whole name without one). */
static size_t key_length(const char *name) {
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    const char *dot = strchr(base, '.');
    return dot ? (size_t)(dot - name) : strlen(name);
}

/* Marks the shard broken with libarchive's reason. */
static int broken(uform__shard_reader_t *reader, const char *doing) {
    struct archive *archive = reader->archive;
    int error = archive_errno(archive);
    const char *why = archive_error_string(archive);
    reader->broken = error == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_FORMAT;
    snprintf(reader->message, sizeof reader->message, "%s: %s (a truncated or corrupt tar)", doing,
             why ? why : error ? strerror(error) : "unexpected end of the archive");
    reader->ended = 1;
    return -1;
}

/* Reads the next regular member's header into reader->pending_name; answers 1, 0 at the end, -1 broken. */
static int next_header(uform__shard_reader_t *reader) {
    struct archive *archive = reader->archive;
    for (;;) {
        struct archive_entry *entry = NULL;
        int result = archive_read_next_header(archive, &entry);
        if (result == ARCHIVE_EOF) {
            reader->ended = 1;
            return 0;
        }
        if (result != ARCHIVE_OK && result != ARCHIVE_WARN) return broken(reader, "reading a member's header");
        if (archive_entry_filetype(entry) != AE_IFREG) continue;
        const char *name = archive_entry_pathname(entry);
        if (!name || !*name) continue;
        free(reader->pending_name);
        reader->pending_name = strdup(name);
        if (!reader->pending_name) {
            reader->broken = UFORM_OUT_OF_MEMORY, reader->ended = 1;
            snprintf(reader->message, sizeof reader->message, "out of memory for a member's name");
            return -1;
        }
        reader->pending = 1;
        return 1;
    }
}

/* Reads the pending member's data (at most max_bytes). Answers the bytes (NUL-terminated), or NULL:
 * too large (*too_large set, data skipped) or broken (reader->ended). */
static unsigned char *read_member(uform__shard_reader_t *reader, size_t *size, int *too_large) {
    struct archive *archive = reader->archive;
    *too_large = 0;
    size_t capacity = 1 << 16, used = 0;
    unsigned char *bytes = malloc(capacity + 1);
    if (!bytes) {
        reader->broken = UFORM_OUT_OF_MEMORY, reader->ended = 1;
        snprintf(reader->message, sizeof reader->message, "out of memory reading a member");
        return NULL;
    }
    for (;;) {
        if (used == capacity) {
            if (capacity >= reader->max_bytes) {
                *too_large = 1;
                free(bytes);
                if (archive_read_data_skip(archive) != ARCHIVE_OK) broken(reader, "skipping a member");
                return NULL;
            }
            size_t grown_capacity = capacity * 2 > reader->max_bytes ? reader->max_bytes : capacity * 2;
            unsigned char *grown = realloc(bytes, grown_capacity + 1);
            if (!grown) {
                free(bytes);
                reader->broken = UFORM_OUT_OF_MEMORY, reader->ended = 1;
                snprintf(reader->message, sizeof reader->message, "out of memory reading a member of %zu bytes", grown_capacity);
                return NULL;
            }
            bytes = grown, capacity = grown_capacity;
        }
        la_ssize_t got = archive_read_data(archive, bytes + used, capacity - used);
        if (got < 0) {
            free(bytes);
            broken(reader, "reading a member's data");
            return NULL;
        }
        if (got == 0) break;
        used += (size_t)got;
    }
    bytes[used] = 0;
    *size = used;
    reader->bytes_read += used;
    return bytes;
}

static void bad(uform__shard_sample_t *sample, uform_status_t status, const char *format, const char *a, const char *b) {
    if (sample->status != UFORM_OK) return; /* the first problem is the one said */
    char message[UFORM_OUTCOME_MESSAGE_CAPACITY];
    snprintf(message, sizeof message, format, a, b);
    sample->status = status;
    sample->message = strdup(message);
}

/* The caption of a .json member, or NULL. */
static char *json_caption(const unsigned char *bytes, size_t size) {
    cJSON *root = NULL;
    char *text = NULL;
    if (uform__json_parse((const char *)bytes, size, &root, NULL, NULL) == UFORM_OK) {
        const cJSON *caption = cJSON_GetObjectItemCaseSensitive(root, "caption");
        if (!cJSON_IsString(caption)) caption = cJSON_GetObjectItemCaseSensitive(root, "text");
        if (cJSON_IsString(caption)) text = strdup(caption->valuestring);
    }
    cJSON_Delete(root);
    return text;
}

static int has_extension(const char *name, size_t key, const char *extension) {
    const char *last = strrchr(name + key, '.');
    return last && strcasecmp(last + 1, extension) == 0;
}

int uform__shard_next(uform__shard_reader_t *reader, int with_bytes, uform__shard_sample_t *sample) {
    memset(sample, 0, sizeof *sample);
    sample->modality = -1;
    if (reader->ended && !reader->pending) return reader->broken != UFORM_OK ? -1 : 0;
    double start = now_seconds();
    if (!reader->pending) {
        int got = next_header(reader);
        if (got <= 0) {
            reader->seconds += now_seconds() - start;
            return got;
        }
    }
    sample->shard = reader->shard, sample->ordinal = reader->next_ordinal++;
    size_t key = key_length(reader->pending_name);
    sample->key = strndup(reader->pending_name, key);
    if (!sample->key) {
        reader->broken = UFORM_OUT_OF_MEMORY, reader->ended = 1;
        return -1;
    }
    char *json = NULL;
    int result = 1;
    while (reader->pending) {
        const char *name = reader->pending_name;
        size_t length = strlen(name);
        if (key_length(name) != key || strncmp(name, sample->key, key) != 0) break; /* the next sample's */
        reader->pending = 0;
        int modality = uform__data_modality_of_name(name, length);
        int is_text = has_extension(name, key, "txt"), is_json = has_extension(name, key, "json");
        int wanted = modality > 0 || is_text || is_json;
        if (modality > 0 && sample->modality > 0) bad(sample, UFORM_FORMAT, "two media, '%s' and '%s' (a sample has one)", sample->member, name);
        if (!wanted || (modality > 0 && sample->modality > 0) || (is_text && sample->text) || (is_json && json) ||
            (!with_bytes && !is_text && !is_json)) {
            if (modality > 0 && sample->modality < 0) {
                sample->modality = modality;
                sample->member = strdup(name);
            }
            if (archive_read_data_skip(reader->archive) != ARCHIVE_OK) {
                result = broken(reader, "skipping a member");
                break;
            }
        } else {
            size_t size = 0;
            int too_large = 0;
            unsigned char *bytes = read_member(reader, &size, &too_large);
            if (!bytes && !too_large) {
                result = -1;
                break;
            }
            if (too_large) {
                char limit[32];
                snprintf(limit, sizeof limit, "%zu", reader->max_bytes);
                bad(sample, UFORM_FORMAT, "member '%s' holds more than the %s bytes a sample may", name, limit);
            } else if (modality > 0) {
                sample->modality = modality, sample->bytes = bytes, sample->size = size;
                free(sample->member);
                sample->member = strdup(name);
                bytes = NULL;
            } else if (is_text) {
                if (size && bytes[size - 1] == '\n') bytes[--size] = 0;
                if (size && bytes[size - 1] == '\r') bytes[--size] = 0;
                sample->text = (char *)bytes, sample->text_length = size;
                if (!sample->member) sample->member = strdup(name);
                bytes = NULL;
            } else {
                json = (char *)bytes, bytes = NULL;
            }
            free(bytes);
        }
        if (next_header(reader) < 0) {
            result = -1;
            break;
        }
    }
    if (result == 1 && !sample->text && json) {
        sample->text = json_caption((const unsigned char *)json, strlen(json));
        if (sample->text) sample->text_length = strlen(sample->text);
    }
    free(json);
    if (result == 1) {
        /* A sample without text is still an item (to index); the loader refuses it for training. */
        if (sample->text) sample->text_hash = uform__data_hash(sample->text, sample->text_length, UFORM__DATA_HASH_SEED);
        if (!sample->text && sample->modality < 0) bad(sample, UFORM_FORMAT, "neither a text nor a medium member%s%s", "", "");
        if (!sample->member) sample->member = strdup(sample->key);
    }
    reader->seconds += now_seconds() - start;
    if (result < 0) {
        /* The samples before were whole; this one is cut: say which. */
        if (sample->key && reader->broken == UFORM_FORMAT) {
            size_t used = strlen(reader->message);
            snprintf(reader->message + used, sizeof reader->message - used, ", in sample '%.200s'", sample->key);
        }
        uform__shard_sample_free(sample);
    }
    return result;
}
