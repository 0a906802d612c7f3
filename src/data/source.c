/*
 * The bottom of the data layer (source.h): error records, lines, names and paths, whole files and
 * JSON captions — what the sources (manifest.c, folder.c, shard_list.c, shard_read.c) and the
 * layers above them share. It calls no source and nothing above itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/source.h"
#include "io/json.h"

/* ---- errors ---- */

void uform__data_error_clear(uform_data_error_t *error) {
    if (!error) return;
    memset(error, 0, sizeof *error);
    error->shard = SIZE_MAX, error->content = SIZE_MAX;
}

void uform__data_error_set(uform_data_error_t *error, uform_status_t status, size_t line, size_t shard,
                           const char *source, const char *key, const char *format, ...) {
    if (!error) return;
    uform__data_error_clear(error);
    error->status = status, error->line = line, error->shard = shard;
    if (source) snprintf(error->source, sizeof error->source, "%s", source);
    if (key) snprintf(error->key, sizeof error->key, "%s", key);
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(error->message, sizeof error->message, format, arguments);
    va_end(arguments);
}

void uform__data_error_place(const uform_data_error_t *error, char *buffer, size_t capacity) {
    if (error->shard != SIZE_MAX && error->key[0])
        snprintf(buffer, capacity, "shard '%s', sample '%s'", error->source, error->key);
    else if (error->shard != SIZE_MAX) snprintf(buffer, capacity, "shard '%s'", error->source);
    else if (error->line && error->key[0]) snprintf(buffer, capacity, "%s, line %zu of %s", error->key, error->line, error->source);
    else if (error->line) snprintf(buffer, capacity, "%s:%zu", error->source, error->line);
    else if (error->key[0]) snprintf(buffer, capacity, "'%s'", error->key);
    else snprintf(buffer, capacity, "'%s'", error->source);
}

/* ---- lines ---- */

uform__line_t *uform__lines_add(uform__lines_t *lines) {
    if (lines->count == lines->capacity) {
        size_t capacity = lines->capacity ? 2 * lines->capacity : 256;
        uform__line_t *grown = realloc(lines->items, capacity * sizeof *grown);
        if (!grown) return NULL;
        lines->items = grown, lines->capacity = capacity;
    }
    uform__line_t *line = &lines->items[lines->count++];
    memset(line, 0, sizeof *line);
    line->modality = -1;
    return line;
}

void uform__line_clear(uform__line_t *line) {
    free(line->text), free(line->path), free(line->choices), free(line->key), free(line->message);
    size_t number = line->number;
    const char *source = line->source;
    memset(line, 0, sizeof *line);
    line->number = number, line->source = source, line->modality = -1;
}

const char *uform__lines_add_source(uform__lines_t *lines, const char *path) {
    char **sources = realloc(lines->sources, (lines->source_count + 1) * sizeof *sources);
    if (!sources) return NULL;
    lines->sources = sources;
    char *copy = strdup(path);
    if (copy) lines->sources[lines->source_count++] = copy;
    return copy;
}

void uform__lines_free(uform__lines_t *lines) {
    for (size_t i = 0; i < lines->count; ++i) uform__line_clear(&lines->items[i]);
    for (size_t i = 0; i < lines->source_count; ++i) free(lines->sources[i]);
    free(lines->items), free(lines->sources);
    memset(lines, 0, sizeof *lines);
}

/* ---- names, paths and files ---- */

int uform__data_modality_of_name(const char *name, size_t length) {
    const char *dot = NULL;
    for (size_t i = length; i > 0; --i) {
        if (name[i - 1] == '/') break;
        if (name[i - 1] == '.') {
            dot = name + i - 1;
            break;
        }
    }
    if (!dot) return -1;
    char extension[8];
    size_t n = (size_t)(name + length - dot - 1);
    if (n == 0 || n >= sizeof extension) return -1;
    for (size_t i = 0; i < n; ++i) {
        char c = dot[1 + i];
        extension[i] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    extension[n] = 0;
    static const char *const images[] = {"jpg", "jpeg", "png", "webp"};
    static const char *const videos[] = {"mp4", "webm", "mkv"};
    static const char *const audios[] = {"flac", "wav", "mp3", "ogg"};
    for (size_t i = 0; i < 4; ++i)
        if (strcmp(extension, images[i]) == 0) return UFORM_MODALITY_IMAGE;
    for (size_t i = 0; i < 3; ++i)
        if (strcmp(extension, videos[i]) == 0) return UFORM_MODALITY_VIDEO;
    for (size_t i = 0; i < 4; ++i)
        if (strcmp(extension, audios[i]) == 0) return UFORM_MODALITY_AUDIO;
    return -1;
}

size_t uform__data_key_length(const char *name) {
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    const char *dot = strchr(base, '.');
    return dot ? (size_t)(dot - name) : strlen(name);
}

int uform__data_has_extension(const char *name, size_t key, const char *extension) {
    const char *last = strrchr(name + key, '.');
    return last && strcasecmp(last + 1, extension) == 0;
}

char *uform__data_path_join(const char *folder, size_t folder_length, const char *name) {
    size_t name_length = strlen(name);
    if (name[0] == '/') folder_length = 0;
    int separator = folder_length && folder[folder_length - 1] != '/';
    char *path = malloc(folder_length + (size_t)separator + name_length + 1);
    if (!path) return NULL;
    memcpy(path, folder, folder_length);
    if (separator) path[folder_length] = '/';
    memcpy(path + folder_length + (size_t)separator, name, name_length + 1);
    return path;
}

unsigned char *uform__data_read_file(const char *path, size_t max_bytes, size_t *size, uform_status_t *status,
                                     char *message, size_t capacity) {
    *status = UFORM_IO, *size = 0;
    int descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (descriptor < 0) {
        if (errno == ENOMEM) *status = UFORM_OUT_OF_MEMORY;
        snprintf(message, capacity, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct stat info;
    if (fstat(descriptor, &info) != 0 || !S_ISREG(info.st_mode)) {
        snprintf(message, capacity, "'%s' is not a regular file", path);
        close(descriptor);
        return NULL;
    }
    size_t length = (size_t)info.st_size;
    if (length > max_bytes) {
        snprintf(message, capacity, "'%s' holds %zu bytes, more than the %zu a sample may", path, length, max_bytes);
        *status = UFORM_FORMAT;
        close(descriptor);
        return NULL;
    }
    unsigned char *bytes = malloc(length + 1);
    if (!bytes) {
        snprintf(message, capacity, "cannot allocate %zu bytes for '%s'", length, path);
        *status = UFORM_OUT_OF_MEMORY;
        close(descriptor);
        return NULL;
    }
    size_t done = 0;
    while (done < length) {
        ssize_t got = read(descriptor, bytes + done, length - done);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            snprintf(message, capacity, "cannot read '%s': %s", path, strerror(errno));
            free(bytes);
            close(descriptor);
            return NULL;
        }
        if (got == 0) break; /* the file shrank: what is there */
        done += (size_t)got;
    }
    close(descriptor);
    bytes[done] = 0;
    *size = done, *status = UFORM_OK;
    return bytes;
}

char *uform__data_json_caption(const unsigned char *bytes, size_t size, int *memory) {
    cJSON *root = NULL;
    char *text = NULL;
    uform_status_t parsed = uform__json_parse((const char *)bytes, size, &root, NULL, NULL);
    if (parsed == UFORM_OK) {
        const cJSON *caption = cJSON_GetObjectItemCaseSensitive(root, "caption");
        if (!cJSON_IsString(caption)) caption = cJSON_GetObjectItemCaseSensitive(root, "text");
        if (cJSON_IsString(caption) && !(text = strdup(caption->valuestring))) parsed = UFORM_OUT_OF_MEMORY;
    }
    *memory = parsed == UFORM_OUT_OF_MEMORY;
    cJSON_Delete(root);
    return text;
}
