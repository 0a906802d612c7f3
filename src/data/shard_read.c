/*
 * One WebDataset shard, streamed through libarchive (ustar, pax and GNU long names; gzip): members
 * are grouped into samples by key — the member's path up to the first dot of its file name, so
 * "a/000012.jpg", "a/000012.txt" and "a/000012.json" are one sample "a/000012" — exactly as
 * WebDataset's tar iterator groups them. A sample's text is its .txt member (one trailing line break
 * dropped), else its .json member's "caption" or "text"; its medium the one member whose extension
 * names an image, video or recording (uform__data_modality_of_name). Other members are passed over.
 * Only one member's bytes are in memory at a time besides the sample being assembled.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/outcome.h"
#include "core/clock.h"
#include "data/archive_api.h"
#include "data/shard.h"

void uform__shard_sample_free(uform__shard_sample_t *sample) {
    if (!sample) return;
    free(sample->key), free(sample->member), free(sample->bytes), free(sample->text), free(sample->message);
    memset(sample, 0, sizeof *sample);
    sample->modality = -1;
}

/* ---- libarchive's input, through callbacks of our own ---- */

#define BLOCK_BYTES ((size_t)1 << 16)

static la_ssize_t read_block(struct archive *archive, void *client, const void **buffer) {
    uform__shard_reader_t *reader = client;
    const uform__archive_t *api = reader->api;
    for (;;) {
        ssize_t got = read(reader->descriptor, reader->block, BLOCK_BYTES);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) api->set_error(archive, errno, "cannot read '%s': %s", reader->path, strerror(errno));
        *buffer = reader->block;
        return got;
    }
}

/* Skips by seeking, never past the file's end (a truncated shard must read short, not seek into a hole). */
static la_int64_t skip_bytes(struct archive *archive, void *client, la_int64_t request) {
    uform__shard_reader_t *reader = client;
    (void)archive;
    struct stat info;
    off_t before = lseek(reader->descriptor, 0, SEEK_CUR);
    if (before < 0 || fstat(reader->descriptor, &info) != 0 || request <= 0) return 0; /* 0: libarchive reads over it */
    la_int64_t left = (la_int64_t)info.st_size - (la_int64_t)before, step = request < left ? request : left;
    if (step <= 0 || lseek(reader->descriptor, (off_t)step, SEEK_CUR) < 0) return 0;
    return step;
}

/* Whether `bytes` start like a tar archive (a header whose checksum holds) or a gzip stream: then a
 * failure to open one is not its format's (libarchive says "unrecognized" when memory ran out). */
static int looks_like_a_shard(const unsigned char *bytes, size_t size) {
    if (size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) return 1;
    if (size < 512) return 0;
    unsigned sum = 0, stored = 0;
    for (size_t i = 0; i < 512; ++i) sum += i >= 148 && i < 156 ? ' ' : bytes[i];
    for (size_t i = 148; i < 156 && (bytes[i] == ' ' || (bytes[i] >= '0' && bytes[i] <= '7')); ++i)
        if (bytes[i] != ' ') stored = stored * 8 + (unsigned)(bytes[i] - '0');
    return sum == stored;
}

static void release(uform__shard_reader_t *reader) {
    const uform__archive_t *api = reader->api;
    if (reader->archive) api->read_free(reader->archive);
    if (reader->entry) api->entry_free(reader->entry);
    if (reader->descriptor >= 0) close(reader->descriptor);
    free(reader->block), free(reader->pending_name);
    reader->archive = NULL, reader->entry = NULL, reader->block = NULL, reader->pending_name = NULL, reader->descriptor = -1;
}

uform_status_t uform__shard_open(uform__shard_reader_t *reader, const char *path, size_t shard, size_t max_bytes,
                                 uform_outcome_t *outcome, const char *function) {
    memset(reader, 0, sizeof *reader);
    reader->path = path, reader->shard = shard, reader->max_bytes = max_bytes, reader->descriptor = -1;
    const uform__archive_t *api = NULL;
    uform_status_t loaded = uform__archive_require(&api, function, outcome);
    if (loaded != UFORM_OK) return loaded;
    reader->api = api;
    double start = uform__seconds_now();
    reader->descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (reader->descriptor < 0) {
        int why = errno;
        return uform__fail(outcome, why == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_IO, function, "cannot open the shard '%s': %s", path,
                           strerror(why));
    }
    /* Headers go into an entry of our own (archive_read_next_header2): libarchive 3.6's own entry is
     * allocated by archive_read_new without a check, and a failed allocation there crashes later.
     * The file is read through callbacks of our own, not archive_read_open_filename, which leaks
     * when one of its allocations fails. */
    reader->block = malloc(BLOCK_BYTES);
    reader->entry = reader->block ? api->entry_new() : NULL;
    struct archive *archive = reader->entry ? api->read_new() : NULL;
    if (!archive) {
        release(reader);
        return uform__fail(outcome, UFORM_OUT_OF_MEMORY, function, "cannot allocate a reader for the shard '%s'", path);
    }
    reader->archive = archive;
    int supported = api->read_support_format_tar(archive) == ARCHIVE_OK && api->read_support_format_gnutar(archive) == ARCHIVE_OK &&
                    api->read_support_filter_gzip(archive) == ARCHIVE_OK && api->read_support_filter_none(archive) == ARCHIVE_OK;
    if (!supported || api->read_open2(archive, reader, NULL, read_block, skip_bytes, NULL) != ARCHIVE_OK) {
        int error = api->errno_of(archive);
        char why[UFORM_OUTCOME_MESSAGE_CAPACITY];
        snprintf(why, sizeof why, "%s", api->error_string(archive) ? api->error_string(archive) : error ? strerror(error) : "not a tar archive");
        /* Was it the data, or the memory? Look at the first bytes ourselves, unless libarchive named a
         * fault of the data (ARCHIVE_ERRNO_MISC, -1: "truncated gzip input" from a gzip stream cut short,
         * which starts like a shard but is no allocation that failed). */
        unsigned char head[512];
        ssize_t got = pread(reader->descriptor, head, sizeof head, 0);
        int memory = error == ENOMEM || !supported || (error != -1 && got > 0 && looks_like_a_shard(head, (size_t)got));
        uform_status_t status = memory ? UFORM_OUT_OF_MEMORY : error == ENOENT || error == EACCES ? UFORM_IO : UFORM_FORMAT;
        release(reader);
        if (memory)
            return uform__fail(outcome, status, function, "cannot allocate libarchive's reader of the shard %zu '%s' (%s)", shard, path, why);
        return uform__fail(outcome, status, function, "shard %zu '%s': %s", shard, path, why);
    }
    reader->seconds += uform__seconds_now() - start;
    return UFORM_OK;
}

void uform__shard_close(uform__shard_reader_t *reader) { release(reader); }

/* Marks the shard broken with libarchive's reason. */
static int broken(uform__shard_reader_t *reader, const char *doing) {
    const uform__archive_t *api = reader->api;
    struct archive *archive = reader->archive;
    int error = api->errno_of(archive);
    const char *why = api->error_string(archive);
    reader->broken = error == ENOMEM ? UFORM_OUT_OF_MEMORY : UFORM_FORMAT;
    if (error == ENOMEM) snprintf(reader->message, sizeof reader->message, "cannot allocate memory %s: %s", doing, why ? why : "");
    else
        snprintf(reader->message, sizeof reader->message, "%s: %s (a truncated or corrupt tar)", doing,
                 why ? why : error ? strerror(error) : "unexpected end of the archive");
    reader->ended = 1;
    return -1;
}

/* Reads the next regular member's header into reader->pending_name; answers 1, 0 at the end, -1 broken. */
static int next_header(uform__shard_reader_t *reader) {
    const uform__archive_t *api = reader->api;
    struct archive *archive = reader->archive;
    for (;;) {
        struct archive_entry *entry = reader->entry;
        int result = api->read_next_header2(archive, entry);
        if (result == ARCHIVE_EOF) {
            reader->ended = 1;
            return 0;
        }
        if (result != ARCHIVE_OK && result != ARCHIVE_WARN) return broken(reader, "reading a member's header");
        if (api->entry_filetype(entry) != AE_IFREG) continue;
        const char *name = api->entry_pathname(entry);
        if (!name || !*name) continue;
        free(reader->pending_name);
        reader->pending_name = strdup(name);
        if (!reader->pending_name) {
            reader->broken = UFORM_OUT_OF_MEMORY, reader->ended = 1;
            snprintf(reader->message, sizeof reader->message, "cannot allocate a member's name");
            return -1;
        }
        reader->pending = 1;
        return 1;
    }
}

/* Reads the pending member's data (at most max_bytes). Answers the bytes (NUL-terminated), or NULL:
 * too large (*too_large set, data skipped) or broken (reader->ended). */
static unsigned char *read_member(uform__shard_reader_t *reader, size_t *size, int *too_large) {
    const uform__archive_t *api = reader->api;
    struct archive *archive = reader->archive;
    *too_large = 0;
    size_t capacity = 1 << 16, used = 0;
    unsigned char *bytes = malloc(capacity + 1);
    if (!bytes) {
        reader->broken = UFORM_OUT_OF_MEMORY, reader->ended = 1;
        snprintf(reader->message, sizeof reader->message, "cannot allocate a member's bytes");
        return NULL;
    }
    for (;;) {
        if (used == capacity) {
            if (capacity >= reader->max_bytes) {
                *too_large = 1;
                free(bytes);
                if (api->read_data_skip(archive) != ARCHIVE_OK) broken(reader, "skipping a member");
                return NULL;
            }
            size_t grown_capacity = capacity * 2 > reader->max_bytes ? reader->max_bytes : capacity * 2;
            unsigned char *grown = realloc(bytes, grown_capacity + 1);
            if (!grown) {
                free(bytes);
                reader->broken = UFORM_OUT_OF_MEMORY, reader->ended = 1;
                snprintf(reader->message, sizeof reader->message, "cannot allocate %zu bytes for a member", grown_capacity);
                return NULL;
            }
            bytes = grown, capacity = grown_capacity;
        }
        la_ssize_t got = api->read_data(archive, bytes + used, capacity - used);
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

/* A failed allocation: the sample cannot be read on (the reader is finished, saying what). */
static int out_of_memory(uform__shard_reader_t *reader, const char *what) {
    reader->broken = UFORM_OUT_OF_MEMORY, reader->ended = 1;
    snprintf(reader->message, sizeof reader->message, "cannot allocate %s", what);
    return -1;
}

int uform__shard_next(uform__shard_reader_t *reader, int with_bytes, uform__shard_sample_t *sample) {
    const uform__archive_t *api = reader->api;
    memset(sample, 0, sizeof *sample);
    sample->modality = -1;
    if (reader->ended && !reader->pending) return reader->broken != UFORM_OK ? -1 : 0;
    double start = uform__seconds_now();
    if (!reader->pending) {
        int got = next_header(reader);
        if (got <= 0) {
            reader->seconds += uform__seconds_now() - start;
            return got;
        }
    }
    sample->shard = reader->shard, sample->ordinal = reader->next_ordinal++;
    size_t key = uform__data_key_length(reader->pending_name);
    sample->key = strndup(reader->pending_name, key);
    if (!sample->key) return out_of_memory(reader, "a sample's key");
    char *json = NULL;
    int result = 1;
    while (reader->pending) {
        const char *name = reader->pending_name;
        size_t length = strlen(name);
        if (uform__data_key_length(name) != key || strncmp(name, sample->key, key) != 0) break; /* the next sample's */
        reader->pending = 0;
        int modality = uform__data_modality_of_name(name, length);
        int is_text = uform__data_has_extension(name, key, "txt"), is_json = uform__data_has_extension(name, key, "json");
        int wanted = modality > 0 || is_text || is_json;
        if (modality > 0 && sample->modality > 0) bad(sample, UFORM_FORMAT, "two media, '%s' and '%s' (a sample has one)", sample->member, name);
        if (!wanted || (modality > 0 && sample->modality > 0) || (is_text && sample->text) || (is_json && json) ||
            (!with_bytes && !is_text && !is_json)) {
            if (modality > 0 && sample->modality < 0) {
                sample->modality = modality;
                if (!(sample->member = strdup(name))) {
                    result = out_of_memory(reader, "a member's name");
                    break;
                }
            }
            if (api->read_data_skip(reader->archive) != ARCHIVE_OK) {
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
                bytes = NULL;
                if (!(sample->member = strdup(name))) {
                    result = out_of_memory(reader, "a member's name");
                    break;
                }
            } else if (is_text) {
                if (size && bytes[size - 1] == '\n') bytes[--size] = 0;
                if (size && bytes[size - 1] == '\r') bytes[--size] = 0;
                sample->text = (char *)bytes, sample->text_length = size;
                bytes = NULL;
                if (!sample->member && !(sample->member = strdup(name))) {
                    result = out_of_memory(reader, "a member's name");
                    break;
                }
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
        int memory = 0;
        sample->text = uform__data_json_caption((const unsigned char *)json, strlen(json), &memory);
        if (sample->text) sample->text_length = strlen(sample->text);
        if (memory) result = out_of_memory(reader, "a .json member's caption");
    }
    free(json);
    if (result == 1) {
        /* A sample without text is still an item (to index); the loader refuses it for training. */
        if (sample->text) sample->text_hash = uform__fnv1a64(sample->text, sample->text_length, UFORM__DATA_HASH_SEED);
        if (!sample->text && sample->modality < 0) bad(sample, UFORM_FORMAT, "neither a text nor a medium member%s%s", "", "");
        if (!sample->member && !(sample->member = strdup(sample->key))) result = out_of_memory(reader, "a sample's name");
    }
    reader->seconds += uform__seconds_now() - start;
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
