/*
 * The image processor of a published folder (kernels/signal_pil.h) from its preprocessor_config.json
 * (transformers' CLIPImageProcessor and SiglipImageProcessor keys), with the style's defaults where
 * a key is absent: CLIP resizes the shortest edge to `size` and crops `size` × `size`; SigLIP resizes
 * both sides; OpenCLIP and UForm 3 fill their own keys. What comes out must be the tower's input
 * side, or the folder is refused.
 */
#include <stdio.h>
#include <string.h>

#include "core/outcome.h"
#include "published/published.h"

/* A size key: a number, or an object with "shortest_edge" or "height" / "width". */
static void read_size(uform__config_reader_t *reader, const cJSON *config, const char *key, size_t *shortest,
                      size_t *height, size_t *width) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(config, key);
    if (!item || cJSON_IsNull(item) || reader->status != UFORM_OK) return;
    if (cJSON_IsNumber(item)) {
        size_t value = uform__config_size(reader, config, key, 0);
        *shortest = *height = *width = value;
        return;
    }
    if (!cJSON_IsObject(item)) {
        reader->status = uform__fail(reader->outcome, UFORM_FORMAT, reader->function,
                                     "%s: '%s' is neither a number nor an object of sizes", reader->file, key);
        return;
    }
    const char *path = reader->path;
    reader->path = key;
    if (cJSON_GetObjectItemCaseSensitive(item, "shortest_edge")) {
        *shortest = uform__config_size(reader, item, "shortest_edge", 0);
        *height = *width = *shortest;
    } else {
        *height = uform__config_required(reader, item, "height");
        *width = uform__config_required(reader, item, "width");
        *shortest = *height < *width ? *height : *width;
    }
    reader->path = path;
}

static void read_triple(uform__config_reader_t *reader, const cJSON *config, const char *key, float *values) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(config, key);
    if (!item || cJSON_IsNull(item) || reader->status != UFORM_OK) return;
    if (cJSON_IsNumber(item)) { /* one value for every channel */
        for (int c = 0; c < 3; ++c) values[c] = (float)item->valuedouble;
        return;
    }
    if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 3) {
        reader->status = uform__fail(reader->outcome, UFORM_FORMAT, reader->function, "%s: '%s' is not 3 numbers",
                                     reader->file, key);
        return;
    }
    for (int c = 0; c < 3; ++c) {
        const cJSON *value = cJSON_GetArrayItem(item, c);
        if (!cJSON_IsNumber(value)) {
            reader->status = uform__fail(reader->outcome, UFORM_FORMAT, reader->function, "%s: '%s'[%d] is not a number",
                                         reader->file, key, c);
            return;
        }
        values[c] = (float)value->valuedouble;
    }
}

uform_status_t uform__published_processor(uform__family_context_t *context, uform__signal_pil_style_t style,
                                          size_t size, const float *mean, const float *std) {
    uform__published_t *published = context->published;
    uform__signal_pil_processor_t *processor = &published->processor;
    memset(processor, 0, sizeof *processor);
    processor->style = style;
    processor->filter = UFORM__SIGNAL_PIL_BICUBIC;
    processor->do_resize = processor->do_rescale = processor->do_normalize = 1;
    processor->do_center_crop = style != UFORM__SIGNAL_PIL_STYLE_SIGLIP;
    /* CLIP: the shortest edge; SigLIP, OpenCLIP and UForm 3: a square size. */
    processor->shortest_edge = style == UFORM__SIGNAL_PIL_STYLE_CLIP ? size : 0;
    processor->height = processor->width = size;
    processor->crop_height = processor->crop_width = size;
    processor->rescale_factor = 1.0 / 255.0;
    processor->resize_mode = UFORM__SIGNAL_PIL_SHORTEST;
    for (int c = 0; c < 3; ++c) processor->mean[c] = mean[c], processor->std[c] = std[c];
    if (style != UFORM__SIGNAL_PIL_STYLE_CLIP && style != UFORM__SIGNAL_PIL_STYLE_SIGLIP) return UFORM_OK;
    cJSON *config = NULL;
    uform_status_t status =
        uform__published_json(published, "preprocessor_config.json", 1, &config, context->outcome, context->function);
    if (status != UFORM_OK) return status;
    if (config) {
        uform__config_reader_t reader = {"preprocessor_config.json", "", UFORM_OK, context->outcome, context->function};
        processor->do_resize = uform__config_bool(&reader, config, "do_resize", 1);
        processor->do_center_crop = uform__config_bool(&reader, config, "do_center_crop", processor->do_center_crop);
        processor->do_rescale = uform__config_bool(&reader, config, "do_rescale", 1);
        processor->do_normalize = uform__config_bool(&reader, config, "do_normalize", 1);
        processor->filter = (uform__signal_pil_filter_t)uform__config_size(&reader, config, "resample", 3);
        processor->rescale_factor = uform__config_number(&reader, config, "rescale_factor", 1.0 / 255.0);
        /* A bare integer size is a shortest edge for CLIP (transformers' get_size_dict), a square for SigLIP. */
        size_t shortest = processor->shortest_edge, height = processor->height, width = processor->width;
        read_size(&reader, config, "size", &shortest, &height, &width);
        const cJSON *size_item = cJSON_GetObjectItemCaseSensitive(config, "size");
        int by_edge = style == UFORM__SIGNAL_PIL_STYLE_CLIP &&
                      (cJSON_IsNumber(size_item) || cJSON_GetObjectItemCaseSensitive(size_item, "shortest_edge"));
        processor->shortest_edge = by_edge ? shortest : 0;
        processor->height = height, processor->width = width;
        size_t ignored = 0;
        read_size(&reader, config, "crop_size", &ignored, &processor->crop_height, &processor->crop_width);
        read_triple(&reader, config, "image_mean", processor->mean);
        read_triple(&reader, config, "image_std", processor->std);
        cJSON_Delete(config);
        if (reader.status != UFORM_OK) return reader.status;
    }
    return uform__published_processor_check(context, size);
}

uform_status_t uform__published_processor_check(uform__family_context_t *context, size_t size) {
    const uform__signal_pil_processor_t *processor = &context->published->processor;
    /* Pillow's resampling filters; NEAREST (0) runs as an affine transform there, not reproduced. */
    if (processor->filter != UFORM__SIGNAL_PIL_BICUBIC && processor->filter != UFORM__SIGNAL_PIL_BILINEAR &&
        processor->filter != UFORM__SIGNAL_PIL_LANCZOS && processor->filter != UFORM__SIGNAL_PIL_BOX &&
        processor->filter != UFORM__SIGNAL_PIL_HAMMING)
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "the image processor resamples with PIL filter %d: this engine runs bilinear (2), bicubic (3), "
                           "lanczos (1), box (4) and hamming (5)",
                           (int)processor->filter);
    for (int c = 0; c < 3; ++c)
        if (processor->do_normalize && !(processor->std[c] > 0.0f))
            return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                               "the image processor's std[%d] is %g: it must be positive", c, processor->std[c]);
    /* The tower takes size × size: the processor must make it of a wide and of a tall picture. */
    static const size_t shapes[2][2] = {{300, 451}, {451, 300}};
    for (int i = 0; i < 2; ++i) {
        uform__signal_pil_geometry_t geometry;
        uform_status_t status = uform__signal_pil_geometry(processor, shapes[i][0], shapes[i][1], &geometry, context->outcome);
        if (status != UFORM_OK) {
            snprintf(context->outcome->function, sizeof context->outcome->function, "%s", context->function);
            return status;
        }
        if (geometry.output_height != size || geometry.output_width != size)
            return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                               "the image processor makes %zu × %zu inputs of a %zu × %zu picture, but the vision tower "
                               "takes %zu × %zu",
                               geometry.output_height, geometry.output_width, shapes[i][0], shapes[i][1], size, size);
    }
    return UFORM_OK;
}
