/*
 * Wire decoding (layout in docs/wire.md). Every read goes through a cursor that checks
 * the bytes left first, so malformed input of any length ends in INVALID_PROGRAM with a cause
 * naming the table and entry, never an over-read. Counts are bounded by the bytes left before
 * anything is allocated, so a short program cannot ask for a large allocation.
 */
#include <stdlib.h>
#include <string.h>

#include "session/session.h"

typedef struct cursor_t {
    const unsigned char *bytes;
    size_t length, offset;
} cursor_t;

static int take(cursor_t *cursor, void *out, size_t size) {
    if (cursor->length - cursor->offset < size) return 0;
    memcpy(out, cursor->bytes + cursor->offset, size); // the format and this build are little-endian
    cursor->offset += size;
    return 1;
}
static int take_u8(cursor_t *c, uint8_t *v) { return take(c, v, 1); }
static int take_u16(cursor_t *c, uint16_t *v) { return take(c, v, 2); }
static int take_u32(cursor_t *c, uint32_t *v) { return take(c, v, 4); }
static int take_u64(cursor_t *c, uint64_t *v) { return take(c, v, 8); }
static size_t left(const cursor_t *c) { return c->length - c->offset; }

#define TRUNCATED(what, ...) \
    uform__session_error(error, UFORM_SESSION_INVALID_PROGRAM, "truncated at byte %zu: " what, cursor.offset, __VA_ARGS__)
#define FAIL(...) uform__session_error(error, UFORM_SESSION_INVALID_PROGRAM, __VA_ARGS__)

void uform__session_ir_free(uform__session_ir_t *ir) {
    if (!ir) return;
    if (ir->parameters)
        for (uint32_t i = 0; i < ir->parameter_count; ++i) free(ir->parameters[i].name);
    if (ir->outputs)
        for (uint32_t i = 0; i < ir->output_count; ++i) free(ir->outputs[i].name);
    if (ir->constants)
        for (uint32_t i = 0; i < ir->constant_count; ++i) free(ir->constants[i].payload);
    if (ir->operations)
        for (uint32_t i = 0; i < ir->operation_count; ++i) {
            free(ir->operations[i].operands);
            free(ir->operations[i].attributes);
        }
    free(ir->types);
    free(ir->origins);
    free(ir->definers);
    free(ir->parameters);
    free(ir->constants);
    free(ir->operations);
    free(ir->outputs);
    memset(ir, 0, sizeof *ir);
}

/* Reads a u32-length-prefixed string into a NUL-terminated copy (NULL for length 0). */
static int take_string(cursor_t *cursor, char **out, uform__session_error_t *error, const char *table, uint32_t entry,
                       uform_session_status_t *status) {
    uint32_t length;
    *out = NULL;
    if (!take_u32(cursor, &length) || left(cursor) < length) {
        *status = FAIL("truncated at byte %zu: the name of %s %u", cursor->offset, table, entry);
        return 0;
    }
    if (length > UFORM__SESSION_MAX_NAME) {
        *status = FAIL("%s %u: a name of %u bytes (at most %u)", table, entry, length, UFORM__SESSION_MAX_NAME);
        return 0;
    }
    if (memchr(cursor->bytes + cursor->offset, 0, length)) {
        *status = FAIL("%s %u: the name holds a NUL byte", table, entry);
        return 0;
    }
    if (length) {
        *out = (char *)uform__session_malloc(length + 1u);
        if (!*out) {
            *status = uform__session_error(error, UFORM_SESSION_OUT_OF_MEMORY, "%s %u: no memory for its name", table, entry);
            return 0;
        }
        memcpy(*out, cursor->bytes + cursor->offset, length);
        (*out)[length] = 0;
    }
    cursor->offset += length;
    return 1;
}

static uform_session_status_t define(uform__session_ir_t *ir, uint32_t value, uint8_t origin, uint32_t definer,
                                     const char *table, uint32_t entry, uform__session_error_t *error) {
    if (value >= ir->value_count) return FAIL("%s %u: value id %u is out of range (%u values)", table, entry, value, ir->value_count);
    if (ir->origins[value] != UFORM__SESSION_ORIGIN_NONE) return FAIL("%s %u: value %u is defined twice", table, entry, value);
    ir->origins[value] = origin;
    ir->definers[value] = definer;
    return UFORM_SESSION_OK;
}

#define NOMEM(what) uform__session_error(error, UFORM_SESSION_OUT_OF_MEMORY, "no memory for %s", what)

static uform_session_status_t decode(cursor_t cursor, uform__session_ir_t *ir, uform__session_error_t *error) {
    char magic[4];
    uint32_t version;
    if (!take(&cursor, magic, 4)) return TRUNCATED("%s", "the magic");
    if (memcmp(magic, "UFTP", 4) != 0) return FAIL("bad magic: expected \"UFTP\"");
    if (!take_u32(&cursor, &version)) return TRUNCATED("%s", "the version");
    if (version > UFORM_SESSION_WIRE_VERSION)
        return uform__session_error(error, UFORM_SESSION_UNSUPPORTED_VERSION, "wire version %u is newer than %d", version,
                                    UFORM_SESSION_WIRE_VERSION);
    if (version == 0) return FAIL("wire version 0 does not exist");
    if (!take_u32(&cursor, &ir->value_count) || !take_u32(&cursor, &ir->parameter_count) ||
        !take_u32(&cursor, &ir->constant_count) || !take_u32(&cursor, &ir->operation_count) ||
        !take_u32(&cursor, &ir->output_count))
        return TRUNCATED("%s", "the counts");
    // The smallest entries: value 2 bytes, parameter 8, constant 12, operation 14, output 8.
    if (ir->value_count > UFORM__SESSION_MAX_VALUES || ir->value_count > left(&cursor) / 2)
        return FAIL("truncated: %u values cannot fit in the %zu bytes left", ir->value_count, left(&cursor));
    if ((uint64_t)ir->parameter_count + ir->constant_count + ir->operation_count != ir->value_count)
        return FAIL("%u parameters + %u constants + %u operations do not define %u values", ir->parameter_count,
                    ir->constant_count, ir->operation_count, ir->value_count);
    if (ir->output_count == 0) return FAIL("a program needs at least one output");
    if (ir->output_count > left(&cursor) / 8) return FAIL("truncated: %u outputs cannot fit in the %zu bytes left", ir->output_count, left(&cursor));

    size_t n = ir->value_count ? ir->value_count : 1;
    ir->types = (uform__session_type_t *)uform__session_calloc(n, sizeof *ir->types);
    ir->origins = (uint8_t *)uform__session_calloc(n, 1);
    ir->definers = (uint32_t *)uform__session_calloc(n, sizeof *ir->definers);
    ir->parameters = (uform__session_named_t *)uform__session_calloc(ir->parameter_count + 1u, sizeof *ir->parameters);
    ir->constants = (uform__session_constant_t *)uform__session_calloc(ir->constant_count + 1u, sizeof *ir->constants);
    ir->operations = (uform__session_operation_t *)uform__session_calloc(ir->operation_count + 1u, sizeof *ir->operations);
    ir->outputs = (uform__session_named_t *)uform__session_calloc(ir->output_count, sizeof *ir->outputs);
    if (!ir->types || !ir->origins || !ir->definers || !ir->parameters || !ir->constants || !ir->operations || !ir->outputs)
        return NOMEM("the program tables");

    for (uint32_t i = 0; i < ir->value_count; ++i) {
        uform__session_type_t *type = &ir->types[i];
        if (!take_u8(&cursor, &type->dtype) || !take_u8(&cursor, &type->rank)) return TRUNCATED("value %u", i);
        if (type->dtype >= UFORM__SESSION_DTYPE_COUNT) return FAIL("value %u: unknown dtype %u", i, type->dtype);
        if (type->rank > UFORM_SESSION_MAX_RANK) return FAIL("value %u: rank %u exceeds %d", i, type->rank, UFORM_SESSION_MAX_RANK);
        for (unsigned axis = 0; axis < type->rank; ++axis) {
            uint64_t dim;
            if (!take_u64(&cursor, &dim)) return TRUNCATED("value %u dims", i);
            if (dim == 0 || dim > ((uint64_t)1 << 62)) return FAIL("value %u: dimension %u is %llu", i, axis, (unsigned long long)dim);
            type->dims[axis] = (size_t)dim;
        }
        if (!uform__session_type_finish(type)) return FAIL("value %u: its size overflows 2^62 bytes", i);
    }
    uform_session_status_t status;
    for (uint32_t i = 0; i < ir->parameter_count; ++i) {
        if (!take_u32(&cursor, &ir->parameters[i].value)) return TRUNCATED("parameter %u", i);
        if ((status = define(ir, ir->parameters[i].value, UFORM__SESSION_ORIGIN_PARAMETER, i, "parameter", i, error)))
            return status;
        if (!take_string(&cursor, &ir->parameters[i].name, error, "parameter", i, &status)) return status;
    }
    for (uint32_t i = 0; i < ir->constant_count; ++i) {
        uform__session_constant_t *constant = &ir->constants[i];
        uint64_t size;
        if (!take_u32(&cursor, &constant->value) || !take_u64(&cursor, &size)) return TRUNCATED("constant %u", i);
        if ((status = define(ir, constant->value, UFORM__SESSION_ORIGIN_CONSTANT, i, "constant", i, error))) return status;
        const uform__session_type_t *type = &ir->types[constant->value];
        if (size != type->bytes)
            return FAIL("constant %u (value %u): payload of %llu bytes, its type needs %zu", i, constant->value,
                        (unsigned long long)size, type->bytes);
        if (left(&cursor) < size) return TRUNCATED("the payload of constant %u", i);
        constant->payload = uform__session_aligned(64, (type->bytes + 63u) & ~(size_t)63u);
        if (!constant->payload) return NOMEM("a constant payload");
        memcpy(constant->payload, cursor.bytes + cursor.offset, type->bytes);
        cursor.offset += type->bytes;
    }
    for (uint32_t i = 0; i < ir->operation_count; ++i) {
        uform__session_operation_t *op = &ir->operations[i];
        if (!take_u16(&cursor, &op->opcode) || !take_u32(&cursor, &op->result) || !take_u32(&cursor, &op->operand_count) ||
            !take_u32(&cursor, &op->attribute_count))
            return TRUNCATED("operation %u", i);
        if (!uform__session_opcode_name(op->opcode)) return FAIL("operation %u: unknown opcode %u", i, (unsigned)op->opcode);
        if ((status = define(ir, op->result, UFORM__SESSION_ORIGIN_OPERATION, i, "operation", i, error))) return status;
        if (op->operand_count > UFORM__SESSION_MAX_OPERANDS || op->attribute_count > UFORM__SESSION_MAX_ATTRIBUTES)
            return FAIL("operation %u: %u operands and %u attributes (at most %d and %d)", i, op->operand_count,
                        op->attribute_count, UFORM__SESSION_MAX_OPERANDS, UFORM__SESSION_MAX_ATTRIBUTES);
        if (left(&cursor) < (size_t)op->operand_count * 4u + (size_t)op->attribute_count * 8u)
            return TRUNCATED("the operands of operation %u", i);
        op->operands = (uint32_t *)uform__session_malloc((size_t)op->operand_count * 4u + 4u);
        op->attributes = (int64_t *)uform__session_malloc((size_t)op->attribute_count * 8u + 8u);
        if (!op->operands || !op->attributes) return NOMEM("operation operands");
        for (uint32_t j = 0; j < op->operand_count; ++j) {
            take_u32(&cursor, &op->operands[j]);
            if (op->operands[j] >= ir->value_count)
                return FAIL("operation %u (%s): operand %u is value %u, out of range (%u values)", i,
                            uform__session_opcode_name(op->opcode), j, op->operands[j], ir->value_count);
        }
        for (uint32_t j = 0; j < op->attribute_count; ++j) take(&cursor, &op->attributes[j], 8);
    }
    for (uint32_t i = 0; i < ir->output_count; ++i) {
        if (!take_u32(&cursor, &ir->outputs[i].value)) return TRUNCATED("output %u", i);
        if (ir->outputs[i].value >= ir->value_count)
            return FAIL("output %u: value id %u is out of range (%u values)", i, ir->outputs[i].value, ir->value_count);
        if (!take_string(&cursor, &ir->outputs[i].name, error, "output", i, &status)) return status;
    }
    if (left(&cursor)) return FAIL("%zu bytes follow the last table", left(&cursor));
    return UFORM_SESSION_OK;
}

uform_session_status_t uform__session_decode(const void *bytes, size_t length, uform__session_ir_t *ir,
                                             uform__session_error_t *error) {
    memset(ir, 0, sizeof *ir);
    if (!bytes) return FAIL("NULL bytes");
    cursor_t cursor = {(const unsigned char *)bytes, length, 0};
    uform_session_status_t status = decode(cursor, ir, error);
    if (status != UFORM_SESSION_OK) uform__session_ir_free(ir);
    return status;
}
