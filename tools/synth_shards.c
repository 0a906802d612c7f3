/*
 * `uform synth --shards N`: the training split again as WebDataset shards, the layout img2dataset
 * writes and OpenCLIP reads — DIR/shards/train-00000.tar ... with, per sample, KEY.png (or .jpg,
 * .mp4, .webm, .wav, .flac: the file's bytes), KEY.txt (its caption) and KEY.json (its manifest line:
 * the attributes drawn). Samples are spread over the shards in an order shuffled from the seed, so
 * every shard mixes pictures, clips and speech as a crawled dataset does. Written with libarchive
 * (pax headers), each shard under a temporary name renamed into place.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "synth.h"

static int add_member(struct archive *archive, const char *name, const void *bytes, size_t size, char *error, size_t capacity) {
    struct archive_entry *entry = archive_entry_new();
    if (!entry) return snprintf(error, capacity, "out of memory writing a shard"), -1;
    archive_entry_set_pathname(entry, name);
    archive_entry_set_size(entry, (la_int64_t)size);
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, 0644);
    archive_entry_set_mtime(entry, 0, 0); /* the same seed writes the same bytes */
    int ok = archive_write_header(archive, entry) == ARCHIVE_OK &&
             (size == 0 || archive_write_data(archive, bytes, size) == (la_ssize_t)size);
    if (!ok) snprintf(error, capacity, "cannot write a shard: %s", archive_error_string(archive));
    archive_entry_free(entry);
    return ok ? 0 : -1;
}

static unsigned char *read_whole(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    if (!file) return NULL;
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *bytes = length >= 0 ? malloc((size_t)length + 1) : NULL;
    if (bytes && fread(bytes, 1, (size_t)length, file) != (size_t)length) free(bytes), bytes = NULL;
    fclose(file);
    *size = (size_t)length;
    return bytes;
}

int synth_write_shards(const synth_item_t *items, size_t count, const char *lines, size_t line_capacity, const char *dir,
                       size_t shards, uint64_t seed, char *error, size_t capacity) {
    size_t *order = malloc((count + 1) * sizeof *order), train = 0;
    if (!order) return snprintf(error, capacity, "out of memory for %zu items", count), -1;
    for (size_t i = 0; i < count; ++i)
        if (items[i].split == 0) order[train++] = i;
    synth_random_t random = synth_random_for(seed, 3, 0, 0); /* a stream of its own: "split" 3 */
    for (size_t i = train; i > 1; --i) {
        size_t j = (size_t)(synth_random_next(&random) % i), swap = order[i - 1];
        order[i - 1] = order[j], order[j] = swap;
    }
    char folder[4200], path[4300], temporary[4400], relative[256], name[64], caption[256];
    snprintf(folder, sizeof folder, "%s/shards", dir);
    if (mkdir(folder, 0755) != 0 && errno != EEXIST) {
        free(order);
        return snprintf(error, capacity, "cannot create '%s': %s", folder, strerror(errno)), -1;
    }
    int status = 0;
    for (size_t s = 0; status == 0 && s < shards; ++s) {
        snprintf(path, sizeof path, "%s/train-%05zu.tar", folder, s);
        snprintf(temporary, sizeof temporary, "%s.part", path);
        struct archive *archive = archive_write_new();
        if (!archive || archive_write_set_format_pax_restricted(archive) != ARCHIVE_OK ||
            archive_write_open_filename(archive, temporary) != ARCHIVE_OK) {
            snprintf(error, capacity, "cannot write '%s': %s", temporary, archive ? archive_error_string(archive) : "out of memory");
            if (archive) archive_write_free(archive);
            status = -1;
            break;
        }
        /* Shard s holds samples [train·s/N, train·(s+1)/N) of the shuffled order. */
        for (size_t k = train * s / shards; status == 0 && k < train * (s + 1) / shards; ++k) {
            const synth_item_t *item = &items[order[k]];
            synth_item_relative(item, relative, sizeof relative);
            char file[4400];
            snprintf(file, sizeof file, "%s/%s", dir, relative);
            size_t size = 0;
            unsigned char *bytes = read_whole(file, &size);
            if (!bytes) {
                snprintf(error, capacity, "cannot read '%s': %s", file, strerror(errno));
                status = -1;
                break;
            }
            if (item->kind == SYNTH_IMAGE) synth_caption_image(&item->scene, caption, sizeof caption);
            else if (item->kind == SYNTH_VIDEO) synth_caption_video(&item->scene, caption, sizeof caption);
            else synth_caption_speech(&item->scene, caption, sizeof caption);
            const char *line = lines + order[k] * line_capacity;
            size_t line_length = strcspn(line, "\n");
            snprintf(name, sizeof name, "%06zu%s", k, strrchr(relative, '.'));
            status = add_member(archive, name, bytes, size, error, capacity);
            snprintf(name, sizeof name, "%06zu.txt", k);
            if (status == 0) status = add_member(archive, name, caption, strlen(caption), error, capacity);
            snprintf(name, sizeof name, "%06zu.json", k);
            if (status == 0) status = add_member(archive, name, line, line_length, error, capacity);
            free(bytes);
        }
        if (archive_write_close(archive) != ARCHIVE_OK && status == 0) {
            snprintf(error, capacity, "cannot write '%s': %s", temporary, archive_error_string(archive));
            status = -1;
        }
        archive_write_free(archive);
        if (status == 0 && rename(temporary, path) != 0) {
            snprintf(error, capacity, "cannot write '%s': %s", path, strerror(errno));
            status = -1;
        }
        if (status) unlink(temporary);
    }
    free(order);
    return status;
}
