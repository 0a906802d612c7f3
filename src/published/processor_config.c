/*
 * The image processor of a published folder (model/processor.h) from its preprocessor_config.json
 * (transformers' CLIPImageProcessor and SiglipImageProcessor keys), with the style's defaults where
 * a key is absent: CLIP resizes the shortest edge to `size` and crops `size` × `size`; SigLIP resizes
 * both sides; torchvision's style (OpenCLIP, UForm 3) is CLIP's with the crop offset rounded half to
 * even. What comes out must be the tower's input side, or the folder is refused.
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

uform_status_t uform__published_processor(uform__family_context_t *context, uform__processor_style_t style,
                                          size_t size, const float *default_mean, const float *default_std) {
    uform__published_t *published = context->published;
    uform__image_processor_t *processor = &published->processor;
    memset(processor, 0, sizeof *processor);
    processor->style = style;
    processor->resample = 3; /* PIL.Image.BICUBIC */
    processor->do_resize = processor->do_rescale = processor->do_normalize = 1;
    processor->do_crop = style != UFORM__PROCESSOR_SIGLIP;
    processor->shortest_edge = processor->resize_height = processor->resize_width = size;
    processor->crop_height = processor->crop_width = size;
    processor->rescale = 1.0 / 255.0;
    for (int c = 0; c < 3; ++c) processor->mean[c] = default_mean[c], processor->std[c] = default_std[c];
    if (style == UFORM__PROCESSOR_TORCHVISION) return UFORM_OK; /* the family fills in its own keys */
    cJSON *config = NULL;
    uform_status_t status =
        uform__published_json(published, "preprocessor_config.json", 1, &config, context->outcome, context->function);
    if (status != UFORM_OK || !config) return status;
    uform__config_reader_t reader = {"preprocessor_config.json", "", UFORM_OK, context->outcome, context->function};
    processor->do_resize = uform__config_bool(&reader, config, "do_resize", 1);
    processor->do_crop = uform__config_bool(&reader, config, "do_center_crop", processor->do_crop);
    processor->do_rescale = uform__config_bool(&reader, config, "do_rescale", 1);
    processor->do_normalize = uform__config_bool(&reader, config, "do_normalize", 1);
    processor->resample = (int)uform__config_size(&reader, config, "resample", 3);
    processor->rescale = uform__config_number(&reader, config, "rescale_factor", 1.0 / 255.0);
    read_size(&reader, config, "size", &processor->shortest_edge, &processor->resize_height, &processor->resize_width);
    size_t ignored = 0;
    read_size(&reader, config, "crop_size", &ignored, &processor->crop_height, &processor->crop_width);
    read_triple(&reader, config, "image_mean", processor->mean);
    read_triple(&reader, config, "image_std", processor->std);
    cJSON_Delete(config);
    if (reader.status != UFORM_OK) return reader.status;
    return uform__published_processor_check(context, size);
}

uform_status_t uform__published_processor_check(uform__family_context_t *context, size_t size) {
    const uform__image_processor_t *processor = &context->published->processor;
    if (processor->resample != 2 && processor->resample != 3)
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "the image processor resamples with PIL filter %d: this engine runs bilinear (2) and bicubic (3)",
                           processor->resample);
    for (int c = 0; c < 3; ++c)
        if (!(processor->std[c] > 0.0f) && processor->do_normalize)
            return uform__fail(context->outcome, UFORM_FORMAT, context->function,
                               "the image processor's std[%d] is %g: it must be positive", c, processor->std[c]);
    size_t height, width;
    if (processor->do_crop) height = processor->crop_height, width = processor->crop_width;
    else if (processor->style == UFORM__PROCESSOR_SIGLIP) height = processor->resize_height, width = processor->resize_width;
    else height = width = 0; /* the shortest edge alone leaves the other side to the picture */
    if (!processor->do_resize || height != size || width != size)
        return uform__fail(context->outcome, UFORM_UNSUPPORTED, context->function,
                           "the image processor makes %zu × %zu pictures%s, but the vision tower takes %zu × %zu",
                           height, width, processor->do_resize ? "" : " (without resizing)", size, size);
    return UFORM_OK;
}
