/*
 * uform_media_probe: which modality a file holds, by content, without decoding. Images and plain
 * recordings are told apart by their magic numbers (sniff.c); containers by walking just enough of
 * their structure to see their tracks, with this file's own bounds-checked readers (no codec
 * library is involved, so probing a million files costs a few microseconds each):
 *
 *   MP4       top-level boxes → moov → trak → mdia → hdlr; handler 'vide' is video, 'soun' audio
 *   Matroska  EBML → Segment → Tracks → TrackEntry → TrackType (1 video, 2 audio)
 *   AVI       RIFF 'AVI ' → LIST 'hdrl' → LIST 'strl' → 'strh' fccType 'vids' / 'auds'
 *   Ogg       the beginning-of-stream pages' first packets: Theora is video, the rest audio
 *
 * A container whose track list is not found (truncated, or tracks after an unsized cluster) is
 * video, except an MP4 whose major brand says audio (M4A, M4B, M4P). Text is anything else that
 * is valid UTF-8 without NUL or control bytes (tab, LF, CR and FF allowed).
 */
#include <string.h>

#include "core/outcome.h"
#include "core/utf8.h"
#include "media/media.h"

typedef enum probe_tracks_t { TRACKS_UNKNOWN = 0, TRACKS_AUDIO = 1, TRACKS_VIDEO = 2 } probe_tracks_t;

static uint32_t big32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static uint32_t little32(const uint8_t *p) { return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0]; }

/* ---- MP4 ---- */

/* The next box in [at, end): its type and payload range. Answers 0 at the end or on a malformed size. */
static int mp4_box(const uint8_t *at, const uint8_t *end, char type[4], const uint8_t **payload, const uint8_t **next) {
    if (end - at < 8) return 0;
    uint64_t size = big32(at), header = 8;
    memcpy(type, at + 4, 4);
    if (size == 1) {
        if (end - at < 16) return 0;
        size = (uint64_t)big32(at + 8) << 32 | big32(at + 12);
        header = 16;
    } else if (size == 0) {
        size = (uint64_t)(end - at);
    }
    if (size < header || size > (uint64_t)(end - at)) return 0;
    *payload = at + header;
    *next = at + size;
    return 1;
}

/* Searches boxes in [at, end) along `path` (box types, depth first) and reports each handler. */
static probe_tracks_t mp4_tracks(const uint8_t *at, const uint8_t *end, int depth) {
    static const char *const path[] = {"moov", "trak", "mdia", "hdlr"};
    probe_tracks_t found = TRACKS_UNKNOWN;
    char type[4];
    const uint8_t *payload, *next;
    while (mp4_box(at, end, type, &payload, &next)) {
        if (memcmp(type, path[depth], 4) == 0) {
            if (depth == 3) {
                if (next - payload >= 12) {
                    if (memcmp(payload + 8, "vide", 4) == 0) return TRACKS_VIDEO;
                    if (memcmp(payload + 8, "soun", 4) == 0) found = TRACKS_AUDIO;
                }
            } else {
                probe_tracks_t inner = mp4_tracks(payload, next, depth + 1);
                if (inner == TRACKS_VIDEO) return inner;
                if (inner == TRACKS_AUDIO) found = inner;
            }
        }
        at = next;
    }
    return found;
}

static probe_tracks_t mp4_probe(const uint8_t *bytes, size_t size) {
    probe_tracks_t tracks = mp4_tracks(bytes, bytes + size, 0);
    if (tracks != TRACKS_UNKNOWN) return tracks;
    static const char *const audio_brands[] = {"M4A ", "M4B ", "M4P "};
    for (size_t i = 0; i < 3; ++i)
        if (size >= 12 && memcmp(bytes + 8, audio_brands[i], 4) == 0) return TRACKS_AUDIO;
    return TRACKS_VIDEO;
}

/* ---- Matroska / WebM ---- */

/* An EBML variable-length integer at `at`: its value (with the length marker kept for IDs, removed
 * for sizes) and length. Answers 0 when malformed or past `end`. `unknown` is set for an all-ones size. */
static int ebml_vint(const uint8_t *at, const uint8_t *end, int keep_marker, uint64_t *value, size_t *length,
                     int *unknown) {
    if (at >= end || *at == 0) return 0;
    size_t bytes = 1;
    while (!(*at & (0x80 >> (bytes - 1)))) ++bytes;
    if (bytes > 8 || (size_t)(end - at) < bytes) return 0;
    uint64_t result = keep_marker ? *at : (uint64_t)(*at & (0xFF >> bytes));
    int all_ones = (*at & (0xFF >> bytes)) == (0xFF >> bytes);
    for (size_t i = 1; i < bytes; ++i) {
        result = result << 8 | at[i];
        all_ones &= at[i] == 0xFF;
    }
    *value = result, *length = bytes;
    if (unknown) *unknown = !keep_marker && all_ones;
    return 1;
}

/* The next element in [at, end): ID and payload range (an unknown size runs to `end`). */
static int ebml_element(const uint8_t *at, const uint8_t *end, uint64_t *id, const uint8_t **payload,
                        const uint8_t **next) {
    uint64_t size;
    size_t id_length, size_length;
    int unknown;
    if (!ebml_vint(at, end, 1, id, &id_length, NULL)) return 0;
    if (!ebml_vint(at + id_length, end, 0, &size, &size_length, &unknown)) return 0;
    *payload = at + id_length + size_length;
    if (unknown) size = (uint64_t)(end - *payload);
    if (size > (uint64_t)(end - *payload)) size = (uint64_t)(end - *payload); /* truncated file: read what is there */
    *next = *payload + size;
    return 1;
}

#define EBML_SEGMENT 0x18538067u
#define EBML_TRACKS 0x1654AE6Bu
#define EBML_TRACK_ENTRY 0xAEu
#define EBML_TRACK_TYPE 0x83u
#define EBML_CLUSTER 0x1F43B675u

static probe_tracks_t matroska_tracks(const uint8_t *at, const uint8_t *end) {
    probe_tracks_t found = TRACKS_UNKNOWN;
    uint64_t id;
    const uint8_t *payload, *next;
    while (ebml_element(at, end, &id, &payload, &next)) {
        if (id == EBML_TRACK_ENTRY) {
            uint64_t inner_id;
            const uint8_t *inner_payload, *inner_next, *cursor = payload;
            while (ebml_element(cursor, next, &inner_id, &inner_payload, &inner_next)) {
                if (inner_id == EBML_TRACK_TYPE && inner_next - inner_payload >= 1) {
                    uint64_t type = 0;
                    for (const uint8_t *p = inner_payload; p < inner_next && p < inner_payload + 8; ++p) type = type << 8 | *p;
                    if (type == 1) return TRACKS_VIDEO;
                    if (type == 2) found = TRACKS_AUDIO;
                }
                cursor = inner_next;
            }
        }
        at = next;
    }
    return found;
}

static probe_tracks_t matroska_probe(const uint8_t *bytes, size_t size) {
    const uint8_t *end = bytes + size, *at = bytes, *payload, *next;
    uint64_t id;
    while (ebml_element(at, end, &id, &payload, &next)) {
        if (id == EBML_SEGMENT) {
            const uint8_t *cursor = payload, *inner_payload, *inner_next;
            uint64_t inner_id;
            while (ebml_element(cursor, next, &inner_id, &inner_payload, &inner_next)) {
                if (inner_id == EBML_TRACKS) return matroska_tracks(inner_payload, inner_next);
                if (inner_id == EBML_CLUSTER) break; /* media data: tracks come before it */
                if (inner_next == cursor) break;
                cursor = inner_next;
            }
            return TRACKS_UNKNOWN;
        }
        at = next;
    }
    return TRACKS_UNKNOWN;
}

/* ---- AVI ---- */

static probe_tracks_t avi_chunks(const uint8_t *at, const uint8_t *end, int depth) {
    probe_tracks_t found = TRACKS_UNKNOWN;
    while (end - at >= 8) {
        uint32_t size = little32(at + 4);
        const uint8_t *payload = at + 8;
        if (size > (uint64_t)(end - payload)) size = (uint32_t)(end - payload);
        const uint8_t *next = payload + size + (size & 1);
        if (next > end) next = end;
        if (memcmp(at, "LIST", 4) == 0 && size >= 4 && depth < 2 &&
            (memcmp(payload, "hdrl", 4) == 0 || memcmp(payload, "strl", 4) == 0)) {
            probe_tracks_t inner = avi_chunks(payload + 4, payload + size, depth + 1);
            if (inner == TRACKS_VIDEO) return inner;
            if (inner == TRACKS_AUDIO) found = inner;
        } else if (memcmp(at, "strh", 4) == 0 && size >= 4) {
            if (memcmp(payload, "vids", 4) == 0) return TRACKS_VIDEO;
            if (memcmp(payload, "auds", 4) == 0) found = TRACKS_AUDIO;
        }
        at = next;
    }
    return found;
}

/* ---- Ogg ---- */

static probe_tracks_t ogg_probe(const uint8_t *bytes, size_t size) {
    size_t at = 0;
    probe_tracks_t found = TRACKS_AUDIO;
    /* Every logical stream's first page comes first and carries the beginning-of-stream flag. */
    while (size - at >= 27 && memcmp(bytes + at, "OggS", 4) == 0 && (bytes[at + 5] & 0x02)) {
        size_t segments = bytes[at + 26], body = at + 27 + segments, length = 0;
        if (body > size) break;
        for (size_t s = 0; s < segments; ++s) length += bytes[at + 27 + s];
        if (size - body >= 7 && memcmp(bytes + body, "\x80theora", 7) == 0) return TRACKS_VIDEO;
        if (length > size - body) break;
        at = body + length;
    }
    return found;
}

/* ---- text ---- */

static int is_text(const uint8_t *bytes, size_t size) {
    size_t at = 0;
    while (at < size) {
        uint8_t byte = bytes[at];
        if (byte < 0x80) {
            if ((byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r' && byte != '\f') || byte == 0x7F) return 0;
            ++at;
            continue;
        }
        int valid;
        size_t length = uform__utf8_sequence(bytes + at, size - at, &valid);
        if (!valid) return 0;
        at += length;
    }
    return 1;
}

UFORM_API uform_status_t uform_media_probe(const void *bytes, size_t size, uform_modality_t *modality,
                                           uform_outcome_t *outcome) {
    if (!modality || (!bytes && size))
        return uform__fail(outcome, UFORM_INVALID_ARGUMENT, __func__, "%s is NULL", modality ? "bytes" : "modality");
    *modality = UFORM_MODALITY_TEXT;
    if (size == 0) return uform__fail(outcome, UFORM_FORMAT, __func__, "the file is empty");
    const uint8_t *data = bytes;
    uform__media_kind_t kind = uform__media_sniff(data, size);
    probe_tracks_t tracks = TRACKS_UNKNOWN;
    switch (kind) {
    case UFORM__MEDIA_UNKNOWN:
        if (is_text(data, size)) return uform__succeed(outcome, __func__);
        {
            char head[3 * 4];
            uform__media_head_hex(data, size, 4, head, sizeof head);
            return uform__fail(outcome, UFORM_FORMAT, __func__,
                               "neither media of a known format nor UTF-8 text (%s %s)",
                               size > 4 ? "first bytes" : size == 1 ? "its byte" : "its bytes", head);
        }
    case UFORM__MEDIA_WAV: case UFORM__MEDIA_FLAC: case UFORM__MEDIA_MP3: case UFORM__MEDIA_ADTS:
        *modality = UFORM_MODALITY_AUDIO;
        return uform__succeed(outcome, __func__);
    case UFORM__MEDIA_OGG: tracks = ogg_probe(data, size); break;
    case UFORM__MEDIA_MP4: tracks = mp4_probe(data, size); break;
    case UFORM__MEDIA_MATROSKA: tracks = matroska_probe(data, size); break;
    case UFORM__MEDIA_AVI: tracks = avi_chunks(data + 12, data + size, 0); break;
    default:
        *modality = UFORM_MODALITY_IMAGE; /* every remaining kind is an image format */
        return uform__succeed(outcome, __func__);
    }
    *modality = tracks == TRACKS_AUDIO ? UFORM_MODALITY_AUDIO : UFORM_MODALITY_VIDEO;
    return uform__succeed(outcome, __func__);
}
