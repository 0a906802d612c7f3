/*
 * JPEG through TurboJPEG (libjpeg-turbo 2.1), with the parts no decoder does for us: EXIF
 * orientation (APP1, TIFF tag 0x0112) and CMYK/YCCK to RGB (TurboJPEG refuses that conversion).
 * Pixels match PIL's decoder (same libjpeg-turbo, accurate integer IDCT, fancy upsampling).
 */
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "core/outcome.h"
#include "media/media.h"

/* What the marker walk found before the first scan. */
typedef struct jpeg_markers_t {
    int orientation; /* EXIF orientation 1–8; 1 when absent or invalid */
    int adobe;       /* an Adobe APP14 segment is present: CMYK is stored inverted */
} jpeg_markers_t;

static uint32_t read_u16(const uint8_t *p, int big_endian) {
    return big_endian ? (uint32_t)p[0] << 8 | p[1] : (uint32_t)p[1] << 8 | p[0];
}

static uint32_t read_u32(const uint8_t *p, int big_endian) {
    return big_endian ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
                      : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* Reads the orientation tag from IFD0 of the TIFF structure inside an EXIF APP1 payload.
 * Every offset is bounds-checked; anything malformed means "no orientation" (1), as in PIL. */
static int exif_orientation(const uint8_t *tiff, size_t size) {
    if (size < 8) return 1;
    int big_endian;
    if (tiff[0] == 'I' && tiff[1] == 'I') big_endian = 0;
    else if (tiff[0] == 'M' && tiff[1] == 'M') big_endian = 1;
    else return 1;
    if (read_u16(tiff + 2, big_endian) != 42) return 1;
    uint32_t ifd = read_u32(tiff + 4, big_endian);
    if (ifd > size || size - ifd < 2) return 1;
    uint32_t entries = read_u16(tiff + ifd, big_endian);
    for (uint32_t i = 0; i < entries; ++i) {
        size_t entry = (size_t)ifd + 2 + (size_t)i * 12;
        if (entry + 12 > size) return 1;
        if (read_u16(tiff + entry, big_endian) != 0x0112) continue;
        uint32_t type = read_u16(tiff + entry + 2, big_endian), count = read_u32(tiff + entry + 4, big_endian);
        if (type != 3 || count < 1) return 1; /* SHORT, value stored inline in the first 2 bytes */
        uint32_t value = read_u16(tiff + entry + 8, big_endian);
        return value >= 1 && value <= 8 ? (int)value : 1;
    }
    return 1;
}

/* Walks the marker segments from SOI up to the first SOS. Malformed segment lengths end the walk
 * quietly: TurboJPEG reports the real error when it decodes. */
static jpeg_markers_t jpeg_scan_markers(const uint8_t *bytes, size_t size) {
    jpeg_markers_t found = {1, 0};
    int exif_seen = 0;
    size_t position = 2;
    while (position + 4 <= size) {
        if (bytes[position] != 0xFF) break;
        uint8_t marker = bytes[position + 1];
        if (marker == 0xFF) { ++position; continue; } /* fill byte */
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) { position += 2; continue; } /* no payload */
        if (marker == 0xDA || marker == 0xD9) break; /* scan data or end of image */
        size_t length = read_u16(bytes + position + 2, 1);
        if (length < 2 || position + 2 + length > size) break;
        const uint8_t *payload = bytes + position + 4;
        size_t payload_size = length - 2;
        if (marker == 0xE1 && !exif_seen && payload_size >= 6 && memcmp(payload, "Exif\0\0", 6) == 0) {
            exif_seen = 1;
            found.orientation = exif_orientation(payload + 6, payload_size - 6);
        }
        if (marker == 0xEE && payload_size >= 5 && memcmp(payload, "Adobe", 5) == 0) found.adobe = 1;
        position += 2 + length;
    }
    return found;
}

/*
 * CMYK (after TurboJPEG undid any YCCK transform) to RGB, multiplicatively: r = (1−c)(1−k) in ink
 * fractions, as PIL's CMYK→RGB and libjpeg-turbo's own cmyk.h do (a colour-managed conversion
 * needs an ICC profile, out of scope). Files carrying an Adobe APP14 segment — everything Photoshop
 * and libjpeg write — store inverted values (255 = no ink), so r = C·K/255 on the stored bytes.
 */
static void cmyk_to_rgb(const uint8_t *cmyk, size_t count, int inverted, uint8_t *rgb) {
    for (size_t i = 0; i < count; ++i) {
        uint32_t c = cmyk[4 * i], m = cmyk[4 * i + 1], y = cmyk[4 * i + 2], k = cmyk[4 * i + 3];
        if (!inverted) c = 255 - c, m = 255 - m, y = 255 - y, k = 255 - k;
        rgb[3 * i + 0] = (uint8_t)((c * k + 127) / 255);
        rgb[3 * i + 1] = (uint8_t)((m * k + 127) / 255);
        rgb[3 * i + 2] = (uint8_t)((y * k + 127) / 255);
    }
}

/* TurboJPEG reports memory exhaustion only in its error text: libjpeg's JERR_OUT_OF_MEMORY
 * ("Insufficient memory (case N)") and its own "Memory allocation failure". Either is not the
 * file's fault. */
static int ran_out_of_memory(tjhandle handle) {
    const char *message = tjGetErrorStr2(handle);
    return message && (strstr(message, "Insufficient memory") || strstr(message, "Memory allocation failure"));
}

uform_status_t uform__media_jpeg_decode(const uint8_t *bytes, size_t size, const uform__media_limits_t *limits,
                                        uform__media_image_t *image, uform_outcome_t *outcome) {
    tjhandle handle = tjInitDecompress();
    if (!handle) return uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "JPEG: cannot allocate a TurboJPEG decompressor");
    uform_status_t status = UFORM_OK;
    uint8_t *decoded = NULL;
    /* TurboJPEG may answer success on garbage after SOI without setting these: zero them first. */
    int width = 0, height = 0, subsampling = -1, colorspace = -1;
    if (tjDecompressHeader3(handle, bytes, (unsigned long)size, &width, &height, &subsampling, &colorspace) != 0) {
        if (ran_out_of_memory(handle)) {
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "JPEG: cannot allocate the header's tables (%s)", tjGetErrorStr2(handle));
            goto done;
        }
        status = uform__fail(outcome, UFORM_FORMAT, __func__, "JPEG: corrupt header (%zu bytes): %s", size, tjGetErrorStr2(handle));
        goto done;
    }
    if (width <= 0 || height <= 0) {
        status = uform__fail(outcome, UFORM_FORMAT, __func__, "JPEG: the header gives no size (%d x %d): no frame header before the data", width, height);
        goto done;
    }
    status = uform__media_check_pixels((uint64_t)width, (uint64_t)height, limits, "JPEG", __func__, outcome);
    if (status != UFORM_OK) goto done;

    int cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
    size_t count = (size_t)width * (size_t)height;
    decoded = malloc(count * (cmyk ? 4 : 3));
    if (!decoded) {
        status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "JPEG: cannot allocate %d x %d pixels", width, height);
        goto done;
    }
    int flags = 0;
#ifdef TJFLAG_LIMITSCANS
    flags |= TJFLAG_LIMITSCANS; /* refuses progressive files with an absurd number of scans (a CPU bomb) */
#endif
    if (tjDecompress2(handle, bytes, (unsigned long)size, decoded, width, 0, height, cmyk ? TJPF_CMYK : TJPF_RGB, flags) != 0) {
        /* TurboJPEG calls most damage a warning: truncation, bad progressive scan parameters, bogus
         * tables, each leaving grey or garbled rows. Only stray bytes before a marker (common in files
         * from old cameras, and accepted by PIL) leave a complete image, so every other warning fails. */
        const char *message = tjGetErrorStr2(handle);
        if (ran_out_of_memory(handle)) {
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "JPEG: cannot allocate decoding buffers for %d x %d pixels (%s)",
                                 width, height, message);
            goto done;
        }
        if (tjGetErrorCode(handle) != TJERR_WARNING || !message || !strstr(message, "extraneous bytes before marker")) {
            status = uform__fail(outcome, UFORM_FORMAT, __func__, "JPEG: %d x %d image does not decode (%zu bytes): %s",
                                 width, height, size, message ? message : "unknown error");
            goto done;
        }
    }
    jpeg_markers_t markers = jpeg_scan_markers(bytes, size);
    if (cmyk) {
        cmyk_to_rgb(decoded, count, markers.adobe, decoded); /* 3 bytes out per 4 in: safe in place */
        uint8_t *shrunk = realloc(decoded, count * 3);
        if (shrunk) decoded = shrunk;
    }
    if (markers.orientation != 1) {
        uint32_t oriented_width, oriented_height;
        uint8_t *oriented = uform__media_orient(decoded, (uint32_t)width, (uint32_t)height, markers.orientation,
                                                &oriented_width, &oriented_height);
        if (!oriented) {
            status = uform__fail(outcome, UFORM_OUT_OF_MEMORY, __func__, "JPEG: cannot allocate the oriented %d x %d image", width, height);
            goto done;
        }
        free(decoded);
        decoded = oriented;
        width = (int)oriented_width, height = (int)oriented_height;
    }
    image->width = (uint32_t)width, image->height = (uint32_t)height, image->pixels = decoded;
    decoded = NULL;
done:
    free(decoded);
    tjDestroy(handle);
    return status;
}
