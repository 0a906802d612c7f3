/* Format recognition from magic numbers, and the limits' defaults. */
#include <stdio.h>
#include <string.h>

#include "media/media.h"

void uform__media_limits_resolve(const uform__media_limits_t *limits, uform__media_limits_t *resolved) {
    uform__media_limits_t given = {0};
    if (limits) given = *limits;
    resolved->max_pixels = given.max_pixels ? given.max_pixels : UFORM__MEDIA_MAX_PIXELS;
    resolved->max_seconds = given.max_seconds > 0 ? given.max_seconds : UFORM__MEDIA_MAX_SECONDS;
    resolved->max_frames = given.max_frames ? given.max_frames : UFORM__MEDIA_MAX_FRAMES;
}

static int starts_with(const uint8_t *bytes, size_t size, size_t offset, const char *magic, size_t length) {
    return size >= offset + length && memcmp(bytes + offset, magic, length) == 0;
}

uform__media_kind_t uform__media_sniff(const uint8_t *bytes, size_t size) {
    if (!bytes || size < 2) return UFORM__MEDIA_UNKNOWN;
    if (starts_with(bytes, size, 0, "\xFF\xD8\xFF", 3)) return UFORM__MEDIA_JPEG;
    if (starts_with(bytes, size, 0, "\x89PNG\r\n\x1A\n", 8)) return UFORM__MEDIA_PNG;
    if (starts_with(bytes, size, 0, "RIFF", 4)) {
        if (starts_with(bytes, size, 8, "WEBP", 4)) return UFORM__MEDIA_WEBP;
        if (starts_with(bytes, size, 8, "WAVE", 4)) return UFORM__MEDIA_WAV;
        if (starts_with(bytes, size, 8, "AVI ", 4)) return UFORM__MEDIA_AVI;
        return UFORM__MEDIA_UNKNOWN;
    }
    if (starts_with(bytes, size, 0, "GIF87a", 6) || starts_with(bytes, size, 0, "GIF89a", 6)) return UFORM__MEDIA_GIF;
    /* "BM" alone is too weak: also require a known DIB header size at offset 14. */
    if (size >= 18 && bytes[0] == 'B' && bytes[1] == 'M') {
        uint32_t dib = (uint32_t)bytes[14] | (uint32_t)bytes[15] << 8 | (uint32_t)bytes[16] << 16 | (uint32_t)bytes[17] << 24;
        if (dib == 12 || dib == 16 || dib == 40 || dib == 52 || dib == 56 || dib == 64 || dib == 108 || dib == 124)
            return UFORM__MEDIA_BMP;
    }
    if (starts_with(bytes, size, 0, "II*\0", 4) || starts_with(bytes, size, 0, "MM\0*", 4)) return UFORM__MEDIA_TIFF;
    if (size >= 3 && bytes[0] == 'P' && bytes[1] >= '4' && bytes[1] <= '6' &&
        (bytes[2] == ' ' || bytes[2] == '\n' || bytes[2] == '\r' || bytes[2] == '\t'))
        return UFORM__MEDIA_PNM;
    if (starts_with(bytes, size, 0, "\0\0\0\x0CjP  \r\n\x87\n", 12) || starts_with(bytes, size, 0, "\xFF\x4F\xFF\x51", 4))
        return UFORM__MEDIA_JPEG2000;
    if (starts_with(bytes, size, 0, "fLaC", 4)) return UFORM__MEDIA_FLAC;
    if (starts_with(bytes, size, 0, "OggS", 4)) return UFORM__MEDIA_OGG;
    if (starts_with(bytes, size, 0, "ID3", 3)) return UFORM__MEDIA_MP3;
    if (starts_with(bytes, size, 0, "\x1A\x45\xDF\xA3", 4)) return UFORM__MEDIA_MATROSKA;
    if (starts_with(bytes, size, 4, "ftyp", 4)) {
        /* HEIF and AVIF stills share MP4's box structure; their major brand tells them apart. */
        static const char *const still_brands[] = {"heic", "heix", "hevc", "mif1", "msf1", "avif", "avis"};
        for (size_t i = 0; i < sizeof still_brands / sizeof still_brands[0]; ++i)
            if (starts_with(bytes, size, 8, still_brands[i], 4)) return UFORM__MEDIA_HEIF;
        return UFORM__MEDIA_MP4;
    }
    /* MPEG audio frame sync: 11 set bits; layer bits 00 mean AAC in ADTS, anything else MPEG layer I–III. */
    if (bytes[0] == 0xFF && (bytes[1] & 0xE0) == 0xE0) {
        if ((bytes[1] & 0x06) == 0) return (bytes[1] & 0xF0) == 0xF0 ? UFORM__MEDIA_ADTS : UFORM__MEDIA_UNKNOWN;
        return UFORM__MEDIA_MP3;
    }
    return UFORM__MEDIA_UNKNOWN;
}

const char *uform__media_kind_name(uform__media_kind_t kind) {
    switch (kind) {
    case UFORM__MEDIA_JPEG: return "JPEG image";
    case UFORM__MEDIA_PNG: return "PNG image";
    case UFORM__MEDIA_WEBP: return "WebP image";
    case UFORM__MEDIA_GIF: return "GIF image";
    case UFORM__MEDIA_BMP: return "BMP image";
    case UFORM__MEDIA_TIFF: return "TIFF image";
    case UFORM__MEDIA_PNM: return "PNM image";
    case UFORM__MEDIA_JPEG2000: return "JPEG 2000 image";
    case UFORM__MEDIA_HEIF: return "HEIF/AVIF image";
    case UFORM__MEDIA_WAV: return "WAV recording";
    case UFORM__MEDIA_FLAC: return "FLAC recording";
    case UFORM__MEDIA_OGG: return "Ogg stream";
    case UFORM__MEDIA_MP3: return "MP3 recording";
    case UFORM__MEDIA_ADTS: return "AAC (ADTS) recording";
    case UFORM__MEDIA_MP4: return "MP4 container";
    case UFORM__MEDIA_MATROSKA: return "Matroska/WebM container";
    case UFORM__MEDIA_AVI: return "AVI container";
    default: return "unknown format";
    }
}

int uform__media_kind_is_image(uform__media_kind_t kind) {
    return kind >= UFORM__MEDIA_JPEG && kind <= UFORM__MEDIA_HEIF;
}

const char *uform__media_kind_article(uform__media_kind_t kind) {
    switch (kind) {
    case UFORM__MEDIA_MP4: case UFORM__MEDIA_MP3: case UFORM__MEDIA_ADTS: case UFORM__MEDIA_OGG: case UFORM__MEDIA_AVI:
    case UFORM__MEDIA_UNKNOWN: return "an";
    default: return "a";
    }
}

void uform__media_head_hex(const uint8_t *bytes, size_t size, size_t count, char *text, size_t capacity) {
    if (!capacity) return;
    text[0] = 0;
    for (size_t i = 0, used = 0; i < size && i < count; ++i) {
        int wrote = snprintf(text + used, capacity - used, i ? " %02x" : "%02x", bytes[i]);
        if (wrote < 0 || (size_t)wrote >= capacity - used) break;
        used += (size_t)wrote;
    }
}
